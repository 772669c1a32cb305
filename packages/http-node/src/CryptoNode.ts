/** Node's crypto for the core's Crypto service: synchronous SHA-256 keeps token checks cheap. */
import { Crypto } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createHash, randomFillSync } from "node:crypto"

export const CryptoNode: Layer.Layer<Crypto> = Layer.succeed(Crypto, Crypto.of({
  randomBytes: (n) => Effect.sync(() => randomFillSync(new Uint8Array(n))),
  sha256Hex: (text) => Effect.sync(() => createHash("sha256").update(text).digest("hex"))
}))
