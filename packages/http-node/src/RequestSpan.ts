/**
 * One server span per request, as @effect/platform's own servers make it (its `tracer` middleware
 * is internal, and NodeServer.ts is WES's own server): named by `HttpMiddleware.SpanNameGenerator`,
 * child of the caller's trace (`traceparent`, b3), with the method, path, route (set by the
 * router) and status code. No header is recorded (they carry tokens). Nothing is built while
 * `HttpMiddleware.currentTracerDisabledWhen` says so for the request (all of them when no tracer
 * exports: Server.ts).
 */
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpTraceContext from "@effect/platform/HttpTraceContext"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

export const requestSpan = HttpMiddleware.make((app) =>
  Effect.withFiberRuntime((fiber) => {
    const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest)
    if (fiber.getFiberRef(HttpMiddleware.currentTracerDisabledWhen)(request)) return app
    const name = Context.get(fiber.currentContext, HttpMiddleware.SpanNameGenerator)(request)
    return Effect.useSpan(name, {
      parent: Option.getOrUndefined(HttpTraceContext.fromHeaders(request.headers)),
      kind: "server",
      captureStackTrace: false,
      attributes: { "http.request.method": request.method, "url.path": request.url.split("?")[0] }
    }, (span) =>
      Effect.tap(Effect.exit(Effect.withParentSpan(app, span)), (exit) =>
        span.attribute("http.response.status_code", HttpServerError.exitResponse(exit).status)).pipe(Effect.flatten))
  })
)
