/**
 * What the declared errors (ApiErrors.ts) cannot see by themselves, turned into them once for the
 * whole server: a request the declared schemas reject becomes the 400 naming each field, a body
 * reader's refusal (HttpApiBuilder reads bodies under `orDie`) its own 400, an unknown path 404
 * (405 with `Allow` when the path exists with other methods), and any other defect 500 (logged,
 * details never sent).
 */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { fromDecodeIssues, type DecodeIssue, ValidationError } from "@wes/core"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { InternalError, MethodNotAllowedError, notFound, type NotFoundError } from "./ApiErrors.js"
import { WesApi } from "./Api.js"
import { allowedMethods } from "./Routes.js"

const encodeMethodNotAllowed = Schema.encodeSync(MethodNotAllowedError)

/** Without an operator token every /admin path is missing, whatever the method (not 405). */
const notAllowedOrMissing = (adminEnabled: boolean) => Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
  if (!adminEnabled && (request.url === "/admin" || request.url.startsWith("/admin/") || request.url.startsWith("/admin?"))) {
    return Effect.fail(notFound("Not found"))
  }
  const allowed = allowedMethods(request.url)
  if (allowed.length === 0) return Effect.fail(notFound("Not found"))
  const allow = allowed.join(", ")
  const body = encodeMethodNotAllowed(new MethodNotAllowedError({ status: 405, message: `Method not allowed: use ${allow}` }))
  return Effect.succeed(HttpServerResponse.unsafeJson(body, { status: 405, headers: { allow } }))
})

const tagOf = (u: unknown): string | undefined =>
  typeof u === "object" && u !== null && "_tag" in u && typeof u._tag === "string" ? u._tag : undefined

const isDecodeError = (u: unknown): u is { readonly issues: ReadonlyArray<DecodeIssue> } => tagOf(u) === "HttpApiDecodeError"

export const errorMiddleware = (adminEnabled: boolean) => HttpApiBuilder.middleware(WesApi, (app) =>
  Effect.catchAllCause(app, (cause): Effect.Effect<
    HttpServerResponse.HttpServerResponse,
    ValidationError | NotFoundError | InternalError,
    HttpServerRequest.HttpServerRequest
  > => {
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure)) {
      const error: unknown = failure.value
      if (isDecodeError(error)) return Effect.fail(fromDecodeIssues(error.issues))
      if (tagOf(error) === "RouteNotFound") return notAllowedOrMissing(adminEnabled)
      if (tagOf(error) === "RequestError") return Effect.fail(ValidationError.field("body", "could not be read"))
      return Effect.failCause(cause)
    }
    if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
    const defect = Cause.dieOption(cause)
    if (Option.isSome(defect) && (defect.value instanceof ValidationError || defect.value instanceof InternalError)) {
      return Effect.fail(defect.value)
    }
    return Effect.zipRight(
      Effect.logError("unexpected error", cause),
      Effect.fail(new InternalError({ status: 500, message: "Internal server error" }))
    )
  }))
