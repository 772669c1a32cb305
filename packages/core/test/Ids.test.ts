import { IdGeneratorLive, isUuid } from "@wes/core"
import { CryptoWeb } from "../src/domain/Crypto.js"
import { IdGenerator } from "../src/domain/Ids.js"
import { uuidV7 } from "../src/domain/Ids.js"
import { it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/testing/TestClock"
import { describe, expect } from "vitest"

const ids = IdGeneratorLive.pipe(Layer.provide(CryptoWeb))

describe("ids", () => {
  it("formats a UUID v7 with the timestamp in front and the version and variant bits set", () => {
    const id = uuidV7(0x0123456789ab, 0xabc, new Uint8Array(10).fill(0xff))
    expect(id).toBe("01234567-89ab-7abc-bfff-ffffffffffff")
    expect(isUuid(id)).toBe(true)
  })

  it.effect("generates UUID v7 ids that sort in creation order, also within one millisecond", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(Date.UTC(2026, 10, 21))
      const gen = yield* IdGenerator
      const sameMs = yield* Effect.all(Array.from({ length: 200 }, () => gen.next))
      yield* TestClock.adjust("5 millis")
      const later = yield* gen.next
      const all = [...sameMs, later]
      for (const id of all) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      expect(all.slice().sort()).toEqual(all)
      expect(new Set(all).size).toBe(all.length)
      expect(parseInt(later.replace(/-/g, "").slice(0, 12), 16)).toBe(Date.UTC(2026, 10, 21) + 5)
    }).pipe(Effect.provide(ids)))

  it("recognizes UUIDs", () => {
    expect(isUuid("0b3c1e9e-7f6a-4c1e-9a55-5d2b0c8f1a11")).toBe(true)
    expect(isUuid("not-a-uuid")).toBe(false)
    expect(isUuid("0b3c1e9e7f6a4c1e9a555d2b0c8f1a11")).toBe(false)
  })
})
