/** Randomness and hashing, behind a service so the core stays free of platform imports. */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** Secure random bytes and SHA-256. */
export class Crypto extends Context.Service<Crypto, {
  /** `n` cryptographically secure random bytes. */
  readonly randomBytes: (n: number) => Effect.Effect<Uint8Array>
  /** Lowercase hex SHA-256 of the UTF-8 bytes of `text`. */
  readonly sha256Hex: (text: string) => Effect.Effect<string>
}>()("@wes/core/Crypto") {}

const toHex = (buffer: ArrayBuffer): string => {
  const bytes = new Uint8Array(buffer)
  let s = ""
  for (const b of bytes) s += b.toString(16).padStart(2, "0")
  return s
}

/** The Web Crypto API (`globalThis.crypto`), present in Node 20+, Deno, Bun and browsers. */
export const CryptoWeb: Layer.Layer<Crypto> = Layer.sync(Crypto, () => {
  const web = globalThis.crypto
  const encoder = new TextEncoder()
  return Crypto.of({
    randomBytes: (n) => Effect.sync(() => web.getRandomValues(new Uint8Array(n))),
    sha256Hex: (text) =>
      Effect.promise(() => web.subtle.digest("SHA-256", encoder.encode(text))).pipe(Effect.map(toHex))
  })
})
