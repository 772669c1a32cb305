/**
 * Every error leaves the server as the contract's JSON body: request decoding failures become
 * 400 naming the field, unknown routes 404, and defects 500 (logged, details never sent).
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { fromDecodeIssues } from "@wes/core"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { badRequest, type BadRequestError, InternalError, MethodNotAllowedError, notFound, type NotFoundError } from "./ApiErrors.js"
import { WesApi } from "./Api.js"

/** Every route of the API as (method, path pattern), for telling 405 from 404. */
const routes: ReadonlyArray<{ readonly method: string; readonly pattern: RegExp }> = (() => {
  const out: Array<{ method: string; pattern: RegExp }> = []
  HttpApi.reflect(WesApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const source = endpoint.path.split("/").map((s) => (s.startsWith(":") ? "[^/]+" : s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))).join("/")
      out.push({ method: endpoint.method, pattern: new RegExp(`^${source}/?$`) })
    }
  })
  return out
})()

/** Methods a path is served with (empty when the path is unknown). */
export const allowedMethods = (url: string): ReadonlyArray<string> => {
  const path = url.split("?")[0]!
  return [...new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method))]
}

const notAllowedOrMissing = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request): Effect.Effect<never, NotFoundError | MethodNotAllowedError> => {
  const allowed = allowedMethods(request.url)
  if (allowed.length === 0) return Effect.fail(notFound("Not found"))
  const allow = allowed.join(", ")
  return Effect.zipRight(
    HttpApp.appendPreResponseHandler((_req, response) =>
      Effect.succeed(response.status === 405 ? HttpServerResponse.setHeader(response, "allow", allow) : response)),
    Effect.fail(new MethodNotAllowedError({ status: 405, message: `Method not allowed: use ${allow}` }))
  )
})

const tagOf = (u: unknown): string | undefined =>
  typeof u === "object" && u !== null && "_tag" in u && typeof u._tag === "string" ? u._tag : undefined

export const ErrorMiddleware = HttpApiBuilder.middleware(WesApi, (app) =>
  Effect.catchAllCause(app, (cause): Effect.Effect<never, BadRequestError | NotFoundError | MethodNotAllowedError | InternalError, HttpServerRequest.HttpServerRequest> => {
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure)) {
      const error: unknown = failure.value
      switch (tagOf(error)) {
        case "HttpApiDecodeError": {
          const v = fromDecodeIssues((error as { readonly issues: ReadonlyArray<{ _tag: string; path: ReadonlyArray<PropertyKey>; message: string }> }).issues)
          return Effect.fail(badRequest(v.message, v.details))
        }
        case "RouteNotFound":
          return notAllowedOrMissing
        case "RequestError":
          return Effect.fail(badRequest("The request body could not be read"))
        default:
          return Effect.failCause(cause)
      }
    }
    if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
    return Effect.zipRight(
      Effect.logError("unexpected error", cause),
      Effect.fail(new InternalError({ status: 500, message: "Internal server error" }))
    )
  }))
