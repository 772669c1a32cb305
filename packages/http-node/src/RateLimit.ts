/**
 * Per-client-IP rate limit at the edge: `limit` requests per `window`; the request that goes over
 * and every request during the following cooldown get 429 with `Retry-After`, then normal limits
 * resume. State is one small entry per recently seen IP, kept in least-recently-used order: idle
 * entries are swept as requests arrive and the map never holds more than `maxEntries`.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Option from "effect/Option"
import * as Result from "effect/Result"

export interface RateLimitSettings {
  readonly limit: number
  readonly windowMs: number
  readonly cooldownMs: number
  /** Most IPs tracked at once; beyond it the least recently seen are forgotten. */
  readonly maxEntries: number
}

export const DEFAULT_MAX_ENTRIES = 100_000

/** The contract's default: 40 requests per 10 s, then a 10 s cooldown. */
export const defaultRateLimit: RateLimitSettings = { limit: 40, windowMs: 10_000, cooldownMs: 10_000, maxEntries: DEFAULT_MAX_ENTRIES }

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }

/**
 * Parses `WES_RATE_LIMIT`: `off`, or `<requests>/<window>` such as `40/10s`, `100/1m`, `5/500ms`
 * (the cooldown equals the window).
 */
export const parseRateLimit = (value: string): Result.Result<RateLimitSettings | "off", string> => {
  const v = value.trim().toLowerCase()
  if (v === "off" || v === "false" || v === "0") return Result.succeed("off")
  const m = /^(\d+)\s*\/\s*(\d+)\s*(ms|s|m|h)$/.exec(v)
  if (m === null) return Result.fail(`WES_RATE_LIMIT must be "off" or like "40/10s" (got ${JSON.stringify(value)})`)
  const limit = Number(m[1])
  const windowMs = Number(m[2]) * UNITS[m[3]!]!
  if (limit < 1 || windowMs < 1) return Result.fail("WES_RATE_LIMIT needs at least 1 request per window")
  return Result.succeed({ limit, windowMs, cooldownMs: windowMs, maxEntries: DEFAULT_MAX_ENTRIES })
}

export type RateDecision = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number }

interface Entry {
  start: number
  count: number
  blockedUntil: number
  last: number
}

/** The limiter's state machine; time is passed in, so it runs under any clock. */
export interface RateLimiter {
  readonly check: (key: string, now: number) => RateDecision
  /** IPs currently tracked. */
  readonly size: () => number
}

export const makeRateLimiter = (settings: RateLimitSettings): RateLimiter => {
  const entries = new Map<string, Entry>()
  const idleAfter = Math.max(settings.windowMs, settings.cooldownMs)
  const ALLOWED: RateDecision = { allowed: true }

  const sweep = (now: number) => {
    // Oldest-touched first: stop at the first entry that may still matter.
    for (const [key, e] of entries) {
      if (now - e.last < idleAfter || now < e.blockedUntil) break
      entries.delete(key)
    }
    while (entries.size > settings.maxEntries) {
      const oldest = entries.keys().next()
      if (oldest.done === true) break
      entries.delete(oldest.value)
    }
  }

  return {
    size: () => entries.size,
    check: (key, now) => {
      const found = entries.get(key)
      if (found !== undefined) entries.delete(key)
      const blocked = found !== undefined && now < found.blockedUntil
      const e = found !== undefined && (blocked || now - found.start < settings.windowMs)
        ? found
        : { start: now, count: 0, blockedUntil: 0, last: now }
      if (!blocked) e.count++
      e.last = now
      // Every request, allowed or refused, moves its IP to the recent end and sweeps idle IPs
      // from the other (a client kept blocked must not keep idle entries alive behind it).
      entries.set(key, e)
      sweep(now)
      if (!blocked) {
        if (e.count <= settings.limit) return ALLOWED
        e.blockedUntil = now + settings.cooldownMs
      }
      // Refused, already or from now on: until the cooldown ends.
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((e.blockedUntil - now) / 1000)) }
    }
  }
}

/** `WES_TRUST_PROXY`: how many proxies in front of WES append to `X-Forwarded-For`. */
export const parseTrustProxy = (value: string | undefined): Result.Result<number, string> => {
  if (value === undefined) return Result.succeed(0)
  const v = value.trim().toLowerCase()
  if (v === "" || v === "false" || v === "0" || v === "off") return Result.succeed(0)
  if (v === "true" || v === "on" || v === "yes") return Result.succeed(1)
  const n = Number(v)
  return Number.isInteger(n) && n > 0 && n <= 10
    ? Result.succeed(n)
    : Result.fail(`WES_TRUST_PROXY must be true, false or a number of proxies (got ${JSON.stringify(value)})`)
}

const normalizeIp = (ip: string): string => (ip.startsWith("::ffff:") ? ip.slice(7) : ip)

/**
 * The client's IP: the socket's peer, or with `trustedProxies` > 0 the address that the
 * outermost trusted proxy saw (counted from the right of `X-Forwarded-For`, which clients
 * cannot forge past a proxy that appends to it).
 */
export const clientIp = (request: HttpServerRequest.HttpServerRequest, trustedProxies: number): string =>
  clientIpOf(Option.getOrUndefined(request.remoteAddress), request.headers["x-forwarded-for"], trustedProxies)

/** `clientIp` from the socket's peer address and the X-Forwarded-For header. */
export const clientIpOf = (remoteAddress: string | undefined, header: string | undefined, trustedProxies: number): string => {
  const peer = remoteAddress ?? "unknown"
  if (trustedProxies === 0) return normalizeIp(peer)
  if (header === undefined) return normalizeIp(peer)
  const hops = header.split(",").map((s) => s.trim()).filter((s) => s !== "")
  const ip = hops[hops.length - trustedProxies] ?? hops[0]
  return normalizeIp(ip ?? peer)
}

const limited = (retryAfterSeconds: number) =>
  HttpServerResponse.jsonUnsafe({ status: 429, message: "Rate limit exceeded" }, {
    status: 429,
    headers: { "retry-after": String(retryAfterSeconds) }
  })

/** The rate limit as server middleware; `exempt` paths (health, operator API) are not counted. */
export const rateLimitMiddleware = (
  limiter: RateLimiter,
  options: { readonly trustedProxies: number; readonly exempt: (path: string) => boolean }
) =>
<E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    if (options.exempt(request.url)) return app
    return Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const decision = limiter.check(clientIp(request, options.trustedProxies), now)
      return decision.allowed ? app : Effect.succeed(limited(decision.retryAfterSeconds))
    })
  })
