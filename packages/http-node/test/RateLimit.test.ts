import * as Result from "effect/Result"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeRateLimiter, parseRateLimit, parseTrustProxy } from "../src/RateLimit.js"
import { movableClock } from "./clock.js"
import { startServer, type TestServer } from "./harness.js"

const settings = { limit: 40, windowMs: 10_000, cooldownMs: 10_000, maxEntries: 100_000 }

describe("rate limiter", () => {
  it("allows 40 requests in 10 s and refuses the 41st with a 10 s Retry-After", () => {
    const limiter = makeRateLimiter(settings)
    for (let i = 0; i < 40; i++) expect(limiter.check("1.1.1.1", 1000 + i * 100).allowed).toBe(true)
    expect(limiter.check("1.1.1.1", 5000)).toEqual({ allowed: false, retryAfterSeconds: 10 })
  })

  it("refuses everything during the cooldown, then resumes normal limits", () => {
    const limiter = makeRateLimiter(settings)
    for (let i = 0; i < 41; i++) limiter.check("ip", 0)
    expect(limiter.check("ip", 4_000)).toEqual({ allowed: false, retryAfterSeconds: 6 })
    expect(limiter.check("ip", 9_999)).toEqual({ allowed: false, retryAfterSeconds: 1 })
    expect(limiter.check("ip", 10_000).allowed).toBe(true)
    for (let i = 0; i < 39; i++) expect(limiter.check("ip", 10_001).allowed).toBe(true)
    expect(limiter.check("ip", 10_002).allowed).toBe(false)
  })

  it("starts a new window once the old one has passed", () => {
    const limiter = makeRateLimiter(settings)
    for (let i = 0; i < 40; i++) limiter.check("ip", 0)
    expect(limiter.check("ip", 10_000).allowed).toBe(true)
  })

  it("counts each IP on its own", () => {
    const limiter = makeRateLimiter(settings)
    for (let i = 0; i < 41; i++) limiter.check("a", 0)
    expect(limiter.check("a", 1).allowed).toBe(false)
    expect(limiter.check("b", 1).allowed).toBe(true)
  })

  it("keeps memory bounded: idle IPs are swept and at most maxEntries are tracked", () => {
    const limiter = makeRateLimiter({ ...settings, maxEntries: 1_000 })
    for (let i = 0; i < 100_000; i++) limiter.check(`10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, i)
    expect(limiter.size()).toBeLessThanOrEqual(1_000)
    const idle = makeRateLimiter(settings)
    for (let i = 0; i < 5_000; i++) idle.check(`ip-${i}`, 0)
    idle.check("late", 60_000)
    expect(idle.size()).toBe(1)
  })

  it("parses WES_RATE_LIMIT and WES_TRUST_PROXY", () => {
    expect(parseRateLimit("40/10s")).toEqual(Result.succeed({ limit: 40, windowMs: 10_000, cooldownMs: 10_000, maxEntries: 100_000 }))
    expect(parseRateLimit("100/1m")).toEqual(Result.succeed(expect.objectContaining({ limit: 100, windowMs: 60_000 })))
    expect(parseRateLimit("off")).toEqual(Result.succeed("off"))
    expect(Result.isFailure(parseRateLimit("fast"))).toBe(true)
    expect(parseTrustProxy(undefined)).toEqual(Result.succeed(0))
    expect(parseTrustProxy("true")).toEqual(Result.succeed(1))
    expect(parseTrustProxy("2")).toEqual(Result.succeed(2))
    expect(Result.isFailure(parseTrustProxy("maybe"))).toBe(true)
  })
})

describe("rate limit over HTTP", () => {
  let server: TestServer
  let proxied: TestServer
  const clock = movableClock()
  beforeAll(async () => {
    const rateLimit = { limit: 40, windowMs: 10_000, cooldownMs: 10_000, maxEntries: 1_000 }
    server = await startServer({ http: { rateLimit }, clock: clock.layer })
    proxied = await startServer({ http: { rateLimit, trustedProxies: 1 } })
  })
  afterAll(async () => {
    await server.close()
    await proxied.close()
  })

  it("answers the 41st request with 429, the contract's body and Retry-After, then recovers after the cooldown", async () => {
    const u = await server.user()
    const burst = await Promise.all(Array.from({ length: 40 }, () => server.fetch("/v1/user", { headers: u.auth })))
    expect(burst.every((r) => r.status === 200)).toBe(true)
    const limited = await server.fetch("/v1/user", { headers: u.auth })
    expect(limited.status).toBe(429)
    expect(await limited.json()).toEqual({ status: 429, message: "Rate limit exceeded" })
    expect(Number(limited.headers.get("retry-after"))).toBe(10)
    expect((await server.fetch("/v1/workflow", { headers: u.auth })).status).toBe(429)
    expect((await server.fetch("/healthz")).status).toBe(200)
    clock.advance("9 seconds")
    const late = await server.fetch("/v1/user", { headers: u.auth })
    expect([late.status, late.headers.get("retry-after")]).toEqual([429, "1"])
    clock.advance("1 second")
    expect((await server.fetch("/v1/user", { headers: u.auth })).status).toBe(200)
  })

  it("uses X-Forwarded-For only when told to trust a proxy", async () => {
    const u = await proxied.user()
    const from = (ip: string) => ({ ...u.auth, "x-forwarded-for": `203.0.113.9, ${ip}` })
    await Promise.all(Array.from({ length: 41 }, () => proxied.fetch("/v1/user", { headers: from("198.51.100.1") })))
    expect((await proxied.fetch("/v1/user", { headers: from("198.51.100.1") })).status).toBe(429)
    expect((await proxied.fetch("/v1/user", { headers: from("198.51.100.2") })).status).toBe(200)
  })
})
