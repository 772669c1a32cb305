/** Runner tokens' form (issue 34): an API token's with the `wes_rt_` prefix, never mistaken for one. */
import { it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { describe, expect } from "vitest"
import { CryptoWeb } from "../src/domain/Crypto.js"
import { generateRunnerToken, isWellFormedRunnerToken, RUNNER_TOKEN_PREFIX } from "../src/domain/RunnerToken.js"
import { generateToken, isWellFormedToken } from "../src/domain/Token.js"

describe("runner tokens", () => {
  it.effect("are wes_rt_ + 36 base62 + 6 checksum characters that pass their offline check, and no API token's", () =>
    Effect.gen(function*() {
      const tokens = yield* Effect.all(Array.from({ length: 50 }, () => generateRunnerToken))
      expect(new Set(tokens).size).toBe(50)
      for (const t of tokens) {
        expect(t).toMatch(/^wes_rt_[0-9A-Za-z]{42}$/)
        expect(t.startsWith(RUNNER_TOKEN_PREFIX)).toBe(true)
        expect(isWellFormedRunnerToken(t)).toBe(true)
        expect(isWellFormedToken(t)).toBe(false)
      }
      const api = yield* generateToken
      expect([isWellFormedToken(api), isWellFormedRunnerToken(api)]).toEqual([true, false])
    }).pipe(Effect.provide(CryptoWeb)))

  it("refuses a changed character, a wrong length or another prefix without a lookup", () => {
    const body = "A".repeat(36)
    const valid = Effect.runSync(generateRunnerToken.pipe(Effect.provide(CryptoWeb)))
    const flipped = valid.slice(0, 10) + (valid[10] === "a" ? "b" : "a") + valid.slice(11)
    for (const bad of [flipped, valid.slice(0, -1), `${valid}0`, valid.replace("wes_rt_", "wes_rx_"), `wes_rt_${body}`]) {
      expect([bad, isWellFormedRunnerToken(bad)]).toEqual([bad, false])
    }
  })
})
