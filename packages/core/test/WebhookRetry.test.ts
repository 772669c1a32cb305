/**
 * The webhook retry policy: what is retried (no answer, 429, 5xx) and what is not (other 4xx, a
 * refused address), the backoff Schedule (exponential, jittered, capped) run under the TestClock,
 * and the 24-hour window after which a delivery is failed.
 */
import { it } from "@effect/vitest"
import { type SendResult } from "@wes/core"
import { isRetryable, outcomeOf, webhookRetryDelay, webhookRetrySchedule } from "../src/domain/DeliveryPolicy.js"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/testing/TestClock"
import { describe, expect } from "vitest"

const answered = (status: number): SendResult => ({ _tag: "Answered", status, body: "" })
const options = { base: Duration.seconds(1), cap: Duration.minutes(1) }

describe("webhook retries", () => {
  it("retries no answer, 429 and 5xx; never another 4xx, a 3xx or a refused address", () => {
    expect(isRetryable({ _tag: "NoAnswer", error: "ECONNREFUSED" })).toBe(true)
    for (const s of [429, 500, 502, 503, 504]) expect(isRetryable(answered(s)), String(s)).toBe(true)
    for (const s of [200, 301, 302, 400, 401, 404, 410, 413]) expect(isRetryable(answered(s)), String(s)).toBe(false)
    expect(isRetryable({ _tag: "Refused", error: "private address" })).toBe(false)
  })

  it.effect("under the TestClock, the schedule's retries come after growing gaps (x2, jitter 0.8-1.2) up to the cap", () =>
    Effect.gen(function*() {
      const times = yield* Ref.make<Array<number>>([])
      const attempt = Effect.flatMap(Clock.currentTimeMillis, (now) => Ref.update(times, (ts) => [...ts, now])).pipe(
        Effect.andThen(Effect.flatMap(Ref.get(times), (ts) => (ts.length < 10 ? Effect.fail("500") : Effect.void)))
      )
      const fiber = yield* Effect.forkChild(Effect.retry(attempt, webhookRetrySchedule(options)))
      for (let i = 0; i < 400; i++) yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
      const ts = yield* Ref.get(times)
      expect(ts).toHaveLength(10)
      const gaps = ts.slice(1).map((t, i) => t - ts[i]!)
      gaps.forEach((gap, i) => {
        const nominal = Math.min(1000 * 2 ** i, 60_000)
        // The clock moves in 1 s steps: a retry runs at the first step at or after its due time.
        expect(gap).toBeGreaterThanOrEqual(Math.floor(nominal * 0.8 / 1000) * 1000)
        expect(gap).toBeLessThanOrEqual(Math.ceil(nominal * 1.2 / 1000) * 1000)
      })
      // Doubling beats the jitter: until the cap, every gap is longer than the one before.
      for (let i = 3; i < 6; i++) expect(gaps[i]!).toBeGreaterThan(gaps[i - 1]!)
    }))

  it.effect("the n-th durable delay is the schedule's n-th delay", () =>
    Effect.gen(function*() {
      for (let n = 1; n <= 12; n++) {
        const ms = Duration.toMillis(yield* webhookRetryDelay(n, options))
        const nominal = Math.min(1000 * 2 ** (n - 1), 60_000)
        expect(ms, `delay ${n}`).toBeGreaterThanOrEqual(nominal * 0.8)
        expect(ms, `delay ${n}`).toBeLessThanOrEqual(nominal * 1.2)
      }
    }))

  it.effect("an attempt's outcome: delivered, retried within the window, failed past it or when not retryable", () =>
    Effect.gen(function*() {
      const now = DateTime.makeUnsafe("2026-01-01T00:00:00Z")
      const expires = DateTime.addDuration(now, Duration.hours(24))
      expect(yield* outcomeOf(answered(204), 1, now, expires, options)).toEqual({ _tag: "Delivered" })
      expect(yield* outcomeOf(answered(410), 1, now, expires, options)).toEqual({ _tag: "Failed" })
      const retry = yield* outcomeOf(answered(503), 3, now, expires, options)
      expect(retry._tag).toBe("RetryAt")
      if (retry._tag === "RetryAt") {
        const ms = DateTime.toEpochMillis(retry.at) - DateTime.toEpochMillis(now)
        expect(ms).toBeGreaterThanOrEqual(3200)
        expect(ms).toBeLessThanOrEqual(4800)
      }
      const late = DateTime.subtractDuration(expires, Duration.millis(100))
      expect(yield* outcomeOf({ _tag: "NoAnswer", error: "timeout" }, 5, late, expires, options)).toEqual({ _tag: "Failed" })
    }))
})
