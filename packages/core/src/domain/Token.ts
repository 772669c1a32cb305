/**
 * API tokens (design.md section 3): `wes_` + 36 random base62 characters + 6 base62 characters of
 * the CRC32 of those 36, GitHub-style. A mistyped or made-up token fails the checksum and is
 * rejected without touching storage. Only the SHA-256 of a token is stored.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import { crc32 } from "./Bytes.js"
import { Crypto } from "./Crypto.js"

export const TOKEN_PREFIX = "wes_"
const RANDOM_LENGTH = 36
const CHECKSUM_LENGTH = 6
/** Total length of a token. */
export const TOKEN_LENGTH = TOKEN_PREFIX.length + RANDOM_LENGTH + CHECKSUM_LENGTH

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
const BASE62_CHAR = /^[0-9A-Za-z]+$/

/** `n` as base62, left-padded with "0" to `width`. */
export const base62 = (n: number, width: number): string => {
  let s = ""
  let v = n
  do {
    s = BASE62[v % 62] + s
    v = Math.floor(v / 62)
  } while (v > 0)
  return s.padStart(width, "0")
}

const checksum = (random: string): string => base62(crc32(random), CHECKSUM_LENGTH)

/** True when `token` is `prefix` then the random characters and their checksum (runner tokens share the form). */
export const isWellFormedTokenOf = (prefix: string, token: string): boolean => {
  if (token.length !== prefix.length + RANDOM_LENGTH + CHECKSUM_LENGTH || !token.startsWith(prefix)) return false
  const body = token.slice(prefix.length)
  if (!BASE62_CHAR.test(body)) return false
  return checksum(body.slice(0, RANDOM_LENGTH)) === body.slice(RANDOM_LENGTH)
}

/** True when `token` has the prefix, length, alphabet and checksum of a WES token. */
export const isWellFormedToken = (token: string): boolean => isWellFormedTokenOf(TOKEN_PREFIX, token)

/** A new token value (shown once, never stored). */
export const generateToken: Effect.Effect<string, never, Crypto> = Effect.suspend(() => generateTokenOf(TOKEN_PREFIX))

/** A new token value starting with `prefix` (shown once, never stored). */
export const generateTokenOf = (prefix: string): Effect.Effect<string, never, Crypto> => Effect.gen(function*() {
  const crypto = yield* Crypto
  let random = ""
  while (random.length < RANDOM_LENGTH) {
    const bytes = yield* crypto.randomBytes(RANDOM_LENGTH * 2)
    for (const b of bytes) {
      // 248 = 4 * 62: rejecting larger bytes keeps every character equally likely.
      if (b < 248 && random.length < RANDOM_LENGTH) random += BASE62[b % 62]
    }
  }
  return prefix + random + checksum(random)
})

/** The stored form of a token. */
export const hashToken = (token: string): Effect.Effect<string, never, Crypto> =>
  Effect.flatMap(Crypto, (c) => c.sha256Hex(token))

/** True when a token with this expiry may no longer be used at `now`. */
export const isExpired = (expiresAt: DateTime.Utc | null, now: DateTime.Utc): boolean =>
  expiresAt !== null && DateTime.isLessThanOrEqualTo(expiresAt, now)
