/**
 * The request log (Logging.ts) at the edge: every request is begun as it reaches the app and
 * answered as its response goes out (errors and refusals, 429 included), with the declared route
 * it was routed to and, once authenticated, its caller. Logging.ts writes the line, counts the
 * answer in the HTTP metrics and sets `X-Request-Id` on the node response.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpEffect from "effect/http/HttpEffect"
import * as HttpRouter from "effect/http/HttpRouter"
import { HttpServerRequest } from "effect/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/http/HttpServerResponse"
import { requestLog, requestRecord } from "./Logging.js"
import { nodeMessages } from "./NodeMessages.js"

/** Names the caller of the running request in its log line (once authentication found it). */
export const recordUser = (userId: string): Effect.Effect<void> =>
  Effect.withFiber((fiber) => {
    const request = Context.getOrUndefined(fiber.context, HttpServerRequest)
    const record = request === undefined ? undefined : requestRecord(request)
    if (record !== undefined) record.userId = userId
    return Effect.void
  })

/** Route middleware: names the declared route of the request (`/v1/workflow/:id`) in its log line and metrics. */
export const routeNamed = HttpRouter.middleware((effect) =>
  Effect.withFiber((fiber) => {
    const record = requestRecord(Context.getUnsafe(fiber.context, HttpServerRequest))
    if (record !== undefined) record.route = Context.getUnsafe(fiber.context, HttpRouter.RouteContext).route.path
    return effect
  })
)

/**
 * The request log as server middleware (outermost: it sees every answer, the rate limit's too).
 * The server's middleware runs around the writing of the response, which for a stream lasts as
 * long as the stream: the answer is logged as its writing begins (a pre-response handler), or,
 * for an answer the middleware gave in the app's place (429), as it comes back.
 */
export const accessLog: Effect.Effect<
  <E, R>(app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
> = Effect.map(requestLog, (begin) => (app) =>
  Effect.withFiber((fiber) => {
    const { req, res } = nodeMessages(Context.getUnsafe(fiber.context, HttpServerRequest))
    const record = begin(req, res)
    let logged = false
    const answered = (status: number) => {
      if (logged) return
      logged = true
      record.answered(status)
    }
    HttpEffect.appendPreResponseHandlerUnsafe(fiber.context, (_, response) => {
      answered(response.status)
      return Effect.succeed(response)
    })
    return Effect.tap(app, (response) => Effect.sync(() => answered(response.status)))
  }))
