/**
 * One server span per routed request, as @effect/platform's own servers make it: named by method
 * and declared route (`GET /v1/workflow/:id`), child of the caller's trace (`traceparent`, b3),
 * with the method, path, route and status code. No header is recorded (they carry tokens). Only
 * used when a tracer exports spans (Server.ts), and never for probes and scrapes.
 */
import * as HttpServerError from "effect/unstable/http/HttpServerError"
import type * as HttpServerRequest from "effect/unstable/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/unstable/http/HttpServerResponse"
import * as HttpTraceContext from "effect/unstable/http/HttpTraceContext"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

export const requestSpan = <E, R>(
  route: string,
  request: HttpServerRequest.HttpServerRequest,
  program: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R> =>
  Effect.useSpan(`${request.method} ${route}`, {
    parent: Option.getOrUndefined(HttpTraceContext.fromHeaders(request.headers)),
    kind: "server",
    captureStackTrace: false,
    attributes: { "http.request.method": request.method, "url.path": request.url.split("?")[0], "http.route": route }
  }, (span) =>
    Effect.tap(Effect.exit(Effect.withParentSpan(program, span)), (exit) =>
      span.attribute("http.response.status_code", HttpServerError.exitResponse(exit).status)).pipe(Effect.flatten))
