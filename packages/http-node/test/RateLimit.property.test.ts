/**
 * Suite 6: the rate limiter against a reference model, under an injected clock (the limiter takes
 * the time as an argument; here it is a fake clock that fast-check moves forward). The model is
 * the contract written as plainly as possible: per IP, a fixed window of `limit` requests that
 * opens at the first request after the previous window; the request that goes over and every
 * request in the following cooldown are refused; nothing is ever forgotten.
 */
import * as fc from "effect/testing/FastCheck"
import { describe, expect, it } from "vitest"
import { defaultRateLimit, makeRateLimiter, type RateDecision, type RateLimitSettings } from "../src/RateLimit.js"

interface ModelEntry {
  windowStart: number
  count: number
  blockedUntil: number
  last: number
}

/** The reference model: unbounded, no eviction. */
class Model {
  readonly entries = new Map<string, ModelEntry>()
  constructor(readonly settings: RateLimitSettings) {}

  check(ip: string, now: number): RateDecision {
    const s = this.settings
    let e = this.entries.get(ip)
    if (e !== undefined && now < e.blockedUntil) {
      e.last = now
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((e.blockedUntil - now) / 1000)) }
    }
    if (e === undefined || now >= e.windowStart + s.windowMs) {
      e = { windowStart: now, count: 0, blockedUntil: 0, last: now }
      this.entries.set(ip, e)
    }
    e.count += 1
    e.last = now
    if (e.count > s.limit) {
      e.blockedUntil = now + s.cooldownMs
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(s.cooldownMs / 1000)) }
    }
    return { allowed: true }
  }

  /** IPs that still matter at `now`: seen within the idle time (a blocked IP is always recent). */
  recent(now: number): number {
    const idle = Math.max(this.settings.windowMs, this.settings.cooldownMs)
    let n = 0
    for (const e of this.entries.values()) if (now - e.last < idle || now < e.blockedUntil) n++
    return n
  }
}

/** Requests: which IP, how long after the previous request they arrive (ms), and how many at once. */
const request = (ips: number) => fc.record({
  ip: fc.integer({ min: 0, max: ips - 1 }),
  gap: fc.oneof(
    { arbitrary: fc.constant(0), weight: 6 },
    { arbitrary: fc.integer({ min: 0, max: 50 }), weight: 6 },
    { arbitrary: fc.integer({ min: 0, max: 600 }), weight: 2 },
    { arbitrary: fc.integer({ min: 9_000, max: 11_000 }), weight: 1 },
    { arbitrary: fc.integer({ min: 0, max: 30_000 }), weight: 1 }
  ),
  times: fc.oneof({ arbitrary: fc.constant(1), weight: 3 }, { arbitrary: fc.integer({ min: 1, max: 50 }), weight: 1 })
})

const ipName = (i: number) => `198.51.100.${i}`

/** fast-check runs with a seed printed in the failure message, so a failure can be replayed. */
const params = (numRuns: number) => ({ numRuns })

describe("rate limiter against its model (suite 6)", () => {
  it("decides every request as the model does, and tracks only the IPs that still matter", () => {
    fc.assert(fc.property(fc.array(request(3), { minLength: 1, maxLength: 300 }), (requests) => {
      const limiter = makeRateLimiter(defaultRateLimit)
      const model = new Model(defaultRateLimit)
      let now = 1_000_000
      for (const r of requests) {
        now += r.gap
        for (let i = 0; i < r.times; i++) {
          expect(limiter.check(ipName(r.ip), now)).toEqual(model.check(ipName(r.ip), now))
          expect(limiter.size()).toBe(model.recent(now))
        }
      }
    }), params(300))
  })

  it("refuses the 41st request within 10 s with Retry-After 10, however the 41 are spread", () => {
    fc.assert(fc.property(
      fc.array(fc.integer({ min: 0, max: 9_999 }), { minLength: 41, maxLength: 41 }),
      (offsets) => {
        const limiter = makeRateLimiter(defaultRateLimit)
        const times = [...offsets].sort((a, b) => a - b).map((t) => 50_000 + t - offsets.reduce((m, x) => Math.min(m, x), Infinity))
        const decisions = times.map((t) => limiter.check("203.0.113.7", t))
        expect(decisions.slice(0, 40).every((d) => d.allowed)).toBe(true)
        expect(decisions[40]).toEqual({ allowed: false, retryAfterSeconds: 10 })
      }
    ), params(200))
  })

  it("refuses everything during the 10 s cooldown, then resumes normal limits", () => {
    fc.assert(fc.property(
      fc.array(fc.integer({ min: 0, max: 9_999 }), { minLength: 1, maxLength: 60 }),
      fc.integer({ min: 0, max: 5_000 }),
      (during, after) => {
        const limiter = makeRateLimiter(defaultRateLimit)
        for (let i = 0; i < 40; i++) limiter.check("ip", 0)
        expect(limiter.check("ip", 0).allowed).toBe(false)
        for (const t of [...during].sort((a, b) => a - b)) {
          const d = limiter.check("ip", t)
          expect(d).toEqual({ allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((10_000 - t) / 1000)) })
        }
        // Once the cooldown is over, a fresh window of 40.
        const resume = 10_000 + after
        for (let i = 0; i < 40; i++) expect(limiter.check("ip", resume).allowed).toBe(true)
        expect(limiter.check("ip", resume).allowed).toBe(false)
      }
    ), params(200))
  })

  it("decides an IP's requests the same whatever other IPs do in between", () => {
    fc.assert(fc.property(
      fc.array(fc.integer({ min: 0, max: 700 }), { minLength: 1, maxLength: 120 }),
      fc.array(fc.array(request(50), { maxLength: 5 }), { minLength: 120, maxLength: 120 }),
      (gaps, noise) => {
        const alone = makeRateLimiter(defaultRateLimit)
        const crowded = makeRateLimiter(defaultRateLimit)
        let now = 0
        gaps.forEach((gap, i) => {
          now += gap
          // Other IPs arrive at the same instant (the clock only moves between our requests).
          for (const other of noise[i]!) crowded.check(ipName(other.ip), now)
          expect(crowded.check("192.0.2.1", now)).toEqual(alone.check("192.0.2.1", now))
        })
      }
    ), params(200))
  })

  it("stays bounded with 100,000 distinct IPs: idle entries are evicted and at most maxEntries are kept", () => {
    // Default settings (maxEntries 100,000); 100,000 IPs arriving over ~100 s: only those of the
    // last 10 s are kept.
    fc.assert(fc.property(fc.integer({ min: 1, max: 2 }), fc.integer({ min: 0, max: 2 ** 31 }), (step, salt) => {
      const limiter = makeRateLimiter(defaultRateLimit)
      let peak = 0
      for (let i = 0; i < 100_000; i++) {
        const ip = `10.${(i + salt) >> 16 & 255}.${((i + salt) >> 8) & 255}.${(i + salt) & 255}`
        limiter.check(ip, i * step)
        peak = Math.max(peak, limiter.size())
      }
      // At most the IPs seen in the last idle period (10 s) are tracked.
      expect(peak).toBeLessThanOrEqual(Math.ceil(10_000 / step))
      expect(limiter.check("late", 100_000 * step + 10_000).allowed).toBe(true)
      expect(limiter.size()).toBe(1)
    }), params(4))
    // 100,000 IPs at the same instant: the hard cap holds, evicting the least recently seen.
    const capped = makeRateLimiter({ ...defaultRateLimit, maxEntries: 5_000 })
    for (let i = 0; i < 100_000; i++) {
      capped.check(`fd00::${i.toString(16)}`, 1)
      expect(capped.size()).toBeLessThanOrEqual(5_000)
    }
    expect(capped.size()).toBe(5_000)
  })
})
