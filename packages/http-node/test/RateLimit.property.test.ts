/**
 * Suite 6: the rate limiter against a reference model, under an injected clock (the limiter takes
 * the time as an argument; here it is a fake clock that the property checker moves forward). The model is
 * the contract written as plainly as possible: per IP, a fixed window of `limit` requests that
 * opens at the first request after the previous window; the request that goes over and every
 * request in the following cooldown are refused; nothing is ever forgotten.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import { defaultRateLimit, makeRateLimiter, type RateDecision, type RateLimitSettings } from "../src/RateLimit.js"
import { integer, weighted } from "./arbitraries.js"

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
const request = (ips: number) => Arbitrary.all({
  ip: integer(0, ips - 1),
  gap: weighted(
    [6, Arbitrary.Constant(0)],
    [6, integer(0, 50)],
    [2, integer(0, 600)],
    [1, integer(9_000, 11_000)],
    [1, integer(0, 30_000)]
  ),
  times: weighted([3, Arbitrary.Constant(1)], [1, integer(1, 50)])
})

const ipName = (i: number) => `198.51.100.${i}`

/**
 * `runs` cases, with arrays up to `size` long (the checker's default size would stop them at 10).
 * A failure prints a replay token.
 */
const checks = (runs: number, size: number) => ({ arbitrary: { runs, size } })

describe("rate limiter against its model (suite 6)", () => {
  it.prop("decides every request as the model does, and tracks only the IPs that still matter", [
    Arbitrary.array(request(3), { minLength: 1, maxLength: 300 })
  ], ([requests]) => {
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
  }, checks(300, 300))

  it.prop("refuses the 41st request within 10 s with Retry-After 10, however the 41 are spread", [
    Arbitrary.array(integer(0, 9_999), { minLength: 41, maxLength: 41 })
  ], ([offsets]) => {
    const limiter = makeRateLimiter(defaultRateLimit)
    const times = [...offsets].sort((a, b) => a - b).map((t) => 50_000 + t - offsets.reduce((m, x) => Math.min(m, x), Infinity))
    const decisions = times.map((t) => limiter.check("203.0.113.7", t))
    expect(decisions.slice(0, 40).every((d) => d.allowed)).toBe(true)
    expect(decisions[40]).toEqual({ allowed: false, retryAfterSeconds: 10 })
  }, checks(200, 41))

  it.prop("refuses everything during the 10 s cooldown, then resumes normal limits", [
    Arbitrary.array(integer(0, 9_999), { minLength: 1, maxLength: 60 }),
    integer(0, 5_000)
  ], ([during, after]) => {
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
  }, checks(200, 60))

  it.prop("decides an IP's requests the same whatever other IPs do in between", [
    Arbitrary.array(integer(0, 700), { minLength: 1, maxLength: 120 }),
    Arbitrary.array(Arbitrary.array(request(50), { maxLength: 5 }), { minLength: 120, maxLength: 120 })
  ], ([gaps, noise]) => {
    const alone = makeRateLimiter(defaultRateLimit)
    const crowded = makeRateLimiter(defaultRateLimit)
    let now = 0
    gaps.forEach((gap, i) => {
      now += gap
      // Other IPs arrive at the same instant (the clock only moves between our requests).
      for (const other of noise[i]!) crowded.check(ipName(other.ip), now)
      expect(crowded.check("192.0.2.1", now)).toEqual(alone.check("192.0.2.1", now))
    })
  }, checks(200, 120))

  // Default settings (maxEntries 100,000); 100,000 IPs arriving over ~100 s: only those of the
  // last 10 s are kept.
  it.prop("stays bounded with 100,000 distinct IPs: idle entries are evicted", [integer(1, 2), integer(0, 2 ** 31)], ([step, salt]) => {
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
  }, checks(4, 10))

  it("stays bounded with 100,000 IPs at the same instant: at most maxEntries are kept, the least recently seen evicted", () => {
    const capped = makeRateLimiter({ ...defaultRateLimit, maxEntries: 5_000 })
    for (let i = 0; i < 100_000; i++) {
      capped.check(`fd00::${i.toString(16)}`, 1)
      expect(capped.size()).toBeLessThanOrEqual(5_000)
    }
    expect(capped.size()).toBe(5_000)
  })
})
