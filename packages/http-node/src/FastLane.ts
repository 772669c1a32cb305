/**
 * The hot paths, served straight from node:http: reading a workflow (`GET /v1/workflow/{id}`),
 * the caller (`GET /v1/user`) and following a workflow (`GET /v1/workflow/{id}/subscribe`).
 * Effect's HTTP stack costs tens of microseconds and a parked fiber per request; these three are
 * what clients poll and hold open, so they skip it.
 *
 * The lane answers what its use cases answer, successes and their typed errors (401, 404, 503:
 * through the same `toHttpError`), so a request is never run twice. Anything else -- other
 * methods and paths, a malformed Last-Event-ID, a rate-limited caller, a defect -- is handed
 * unchanged to the HttpApi app; the rate limit counts the request once, whichever side answers.
 * The bytes are the same either way: the same use cases, Schemas, headers and request log line
 * (a test sends the same requests to a server with and without the lane and compares them).
 */
import {
  AccountService,
  type ApiError,
  currentUserJson,
  detailJson,
  isUuid,
  WorkflowService
} from "@wes/core"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import { clientIpOf, decided, type RateLimiter } from "./RateLimit.js"
import { toHttpError } from "./ApiErrors.js"
import { SseHub } from "./SseHub.js"

export type FastLaneServices = AccountService | WorkflowService | SseHub

export interface FastLaneOptions {
  readonly limiter: RateLimiter | undefined
  readonly trustedProxies: number
}

type Reply =
  | { readonly _tag: "json"; readonly body: string }
  | { readonly _tag: "sse"; readonly follow: (res: ServerResponse) => void }

const pathOf = (url: string): string => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

const single = (h: string | ReadonlyArray<string> | undefined): string | undefined => (typeof h === "string" ? h : h?.join(", "))

const WORKFLOW = /^\/v1\/workflow\/([0-9A-Fa-f-]{36})(\/subscribe)?$/
const LAST_EVENT_ID = /^\d{1,15}$/

const json = (res: ServerResponse, status: number, body: string) => {
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
  res.end(body)
}


/**
 * Builds the lane: `take` answers a request it can serve and returns true, or returns false
 * (the caller then gives the request to the app). It may also give a request back later, through
 * `fallback`, when it turns out not to be a success.
 */
export const makeFastLane = (options: FastLaneOptions) =>
  Effect.gen(function*() {
    const accounts = yield* AccountService
    const workflows = yield* WorkflowService
    const hub = yield* SseHub
    const runtime = yield* Effect.runtime<never>()
    const runCallback = Runtime.runCallback(runtime)

    const log = (method: string, path: string, status: number, started: number) =>
      Effect.logInfo("request", { method, path, status, duration_ms: Date.now() - started })

    /** The reply for a request this lane serves, or undefined when the route is not one of its own. */
    const route = (req: IncomingMessage, path: string): Effect.Effect<Reply, ApiError> | undefined => {
      const authorization = req.headers.authorization
      if (path === "/v1/user") {
        return Effect.flatMap(accounts.authenticate(authorization), ({ user }) =>
          Effect.map(accounts.currentUser(user), (view): Reply => ({ _tag: "json", body: JSON.stringify(currentUserJson(view)) })))
      }
      const m = WORKFLOW.exec(path)
      if (m === null || !isUuid(m[1]!)) return undefined
      const id = m[1]!
      if (m[2] === undefined) {
        return Effect.flatMap(accounts.authenticate(authorization), ({ user }) =>
          Effect.map(workflows.get(user, id), (w): Reply => ({ _tag: "json", body: JSON.stringify(detailJson(w)) })))
      }
      const header = req.headers["last-event-id"]
      if (Array.isArray(header)) return undefined
      const lastEventId = header === undefined || header.trim() === "" ? undefined : header.trim()
      if (lastEventId !== undefined && !LAST_EVENT_ID.test(lastEventId)) return undefined
      return Effect.flatMap(accounts.authenticate(authorization), ({ user }) =>
        Effect.map(
          workflows.followStart(user, id, lastEventId === undefined ? undefined : Number(lastEventId)),
          (start): Reply => ({ _tag: "sse", follow: (res) => hub.attach(res, id, start) })
        ))
    }

    const take = (req: IncomingMessage, res: ServerResponse, fallback: () => void): boolean => {
      if (req.method !== "GET" || req.url === undefined) return false
      const path = pathOf(req.url)
      const reply = route(req, path)
      if (reply === undefined) return false
      const started = Date.now()
      if (options.limiter !== undefined) {
        const ip = clientIpOf(req.socket.remoteAddress, single(req.headers["x-forwarded-for"]), options.trustedProxies)
        const decision = options.limiter.check(ip, started)
        if (!decision.allowed) {
          decided.set(req, decision)
          return false
        }
        decided.set(req, decision)
      }
      runCallback(reply, {
        onExit: (exit) => {
          if (res.headersSent || res.destroyed) return
          if (Exit.isSuccess(exit)) {
            const r = exit.value
            if (r._tag === "json") json(res, 200, r.body)
            else {
              res.writeHead(200, { "cache-control": "no-cache", "x-accel-buffering": "no", "content-type": "text/event-stream" })
              r.follow(res)
            }
            runCallback(log("GET", path, 200, started))
            return
          }
          const failure = Cause.failureOption(exit.cause)
          if (Option.isNone(failure)) return fallback()
          const error = toHttpError(failure.value)
          json(res, error.status, JSON.stringify(error))
          runCallback(log("GET", path, error.status, started))
        }
      })
      return true
    }

    return { take }
  })

export type FastLane = Effect.Effect.Success<ReturnType<typeof makeFastLane>>

/**
 * Puts the lane in front of the app's request listener: node's server announces each request by
 * `emit("request", ...)`, so the lane sees it first and passes on what it does not serve.
 */
export const withFastLane = (server: Server, lane: () => FastLane | undefined): Server => {
  const emit = server.emit.bind(server)
  server.emit = ((event: string, ...args: Array<unknown>): boolean => {
    const l = event === "request" ? lane() : undefined
    if (l === undefined) return emit(event, ...args)
    const [req, res] = args as [IncomingMessage, ServerResponse]
    return l.take(req, res, () => void emit(event, req, res)) || emit(event, req, res)
  }) as Server["emit"]
  return server
}
