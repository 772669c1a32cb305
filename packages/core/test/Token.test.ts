import { base62 } from "../src/domain/Token.js"
import { crc32 } from "../src/domain/Bytes.js"
import { Crypto } from "@wes/core"
import { CryptoWeb } from "../src/domain/Crypto.js"
import { generateToken, hashToken, isExpired, isWellFormedToken, TOKEN_LENGTH } from "../src/domain/Token.js"
import { it } from "@effect/vitest"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import { describe, expect } from "vitest"

describe("tokens", () => {
  it("computes the standard CRC-32", () => {
    expect(crc32("123456789")).toBe(0xcbf43926)
    expect(crc32("")).toBe(0)
  })

  it("encodes base62 with padding", () => {
    expect(base62(0, 6)).toBe("000000")
    expect(base62(61, 2)).toBe("0z")
    expect(base62(62, 1)).toBe("10")
    expect(base62(0xffffffff, 6)).toBe("4gfFC3")
  })

  it.effect("generates wes_ + 36 base62 + 6 checksum characters that pass the offline check", () =>
    Effect.gen(function*() {
      const tokens = yield* Effect.all(Array.from({ length: 50 }, () => generateToken))
      for (const t of tokens) {
        expect(t).toMatch(/^wes_[0-9A-Za-z]{42}$/)
        expect(t).toHaveLength(TOKEN_LENGTH)
        expect(isWellFormedToken(t)).toBe(true)
      }
      expect(new Set(tokens).size).toBe(50)
    }).pipe(Effect.provide(CryptoWeb)))

  it.effect("rejects a token with one character changed, a wrong prefix, length or alphabet", () =>
    Effect.gen(function*() {
      const t = yield* generateToken
      const flipped = t.slice(0, 10) + (t[10] === "a" ? "b" : "a") + t.slice(11)
      expect(isWellFormedToken(flipped)).toBe(false)
      expect(isWellFormedToken("xes_" + t.slice(4))).toBe(false)
      expect(isWellFormedToken(t + "a")).toBe(false)
      expect(isWellFormedToken(t.slice(0, -1) + "-")).toBe(false)
      expect(isWellFormedToken("wes_" + "a".repeat(42))).toBe(false)
    }).pipe(Effect.provide(CryptoWeb)))

  it.effect("hashes with SHA-256 (hex)", () =>
    Effect.gen(function*() {
      expect(yield* hashToken("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
      const crypto = yield* Crypto
      expect(yield* crypto.sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }).pipe(Effect.provide(CryptoWeb)))

  it("expires at the expiry instant, not before", () => {
    const expiry = DateTime.makeUnsafe("2026-11-21T10:00:00Z")
    expect(isExpired(expiry, DateTime.makeUnsafe("2026-11-21T09:59:59.999Z"))).toBe(false)
    expect(isExpired(expiry, expiry)).toBe(true)
    expect(isExpired(null, expiry)).toBe(false)
  })
})
