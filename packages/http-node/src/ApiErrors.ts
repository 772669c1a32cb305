/**
 * The contract's error bodies, `{status, message}` (+ `details` for 400), one class per status,
 * and the one mapping from core errors to them.
 */
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import { type ApiError, FieldIssue } from "@wes/core"
import * as Schema from "effect/Schema"

export class BadRequestError extends Schema.Class<BadRequestError>("BadRequest")({
  status: Schema.Literal(400),
  message: Schema.String,
  details: Schema.optional(Schema.Array(FieldIssue))
}, HttpApiSchema.annotations({ status: 400, description: "The request is invalid; `details` names the fields." })) {}

export class UnauthorizedError extends Schema.Class<UnauthorizedError>("Unauthorized")({
  status: Schema.Literal(401),
  message: Schema.Literal("Missing authorization header", "Invalid token", "Token has expired")
}, HttpApiSchema.annotations({ status: 401, description: "Missing, invalid or expired token." })) {}

export class ForbiddenError extends Schema.Class<ForbiddenError>("Forbidden")({
  status: Schema.Literal(403),
  message: Schema.String
}, HttpApiSchema.annotations({ status: 403, description: "A tier limit or permission; the message names it." })) {}

export class NotFoundError extends Schema.Class<NotFoundError>("NotFound")({
  status: Schema.Literal(404),
  message: Schema.String
}, HttpApiSchema.annotations({ status: 404, description: "Missing, or not the caller's." })) {}

export class MethodNotAllowedError extends Schema.Class<MethodNotAllowedError>("MethodNotAllowed")({
  status: Schema.Literal(405),
  message: Schema.String
}, HttpApiSchema.annotations({ status: 405, description: "The path exists, but not with this method; see Allow." })) {}

export class ConflictError extends Schema.Class<ConflictError>("Conflict")({
  status: Schema.Literal(409),
  message: Schema.String
}, HttpApiSchema.annotations({ status: 409, description: "The resource's state does not allow this." })) {}

export class RateLimitedError extends Schema.Class<RateLimitedError>("TooManyRequests")({
  status: Schema.Literal(429),
  message: Schema.Literal("Rate limit exceeded")
}, HttpApiSchema.annotations({ status: 429, description: "Rate limit exceeded; see Retry-After." })) {}

export class HeadersTooLargeError extends Schema.Class<HeadersTooLargeError>("RequestHeaderFieldsTooLarge")({
  status: Schema.Literal(431),
  message: Schema.String
}, HttpApiSchema.annotations({
  status: 431,
  description: "The request line and headers exceed 16 KB (answered by the HTTP parser, before any route)."
})) {}

export class InternalError extends Schema.Class<InternalError>("InternalServerError")({
  status: Schema.Literal(500),
  message: Schema.String
}, HttpApiSchema.annotations({ status: 500, description: "An unexpected error." })) {}

export class UnavailableError extends Schema.Class<UnavailableError>("ServiceUnavailable")({
  status: Schema.Literal(503),
  message: Schema.String
}, HttpApiSchema.annotations({ status: 503, description: "A dependency (the store) is unavailable; retry later." })) {}

export type HttpError =
  | BadRequestError
  | UnauthorizedError
  | ForbiddenError
  | NotFoundError
  | MethodNotAllowedError
  | ConflictError
  | RateLimitedError
  | InternalError
  | UnavailableError

export const badRequest = (message: string, details?: ReadonlyArray<FieldIssue>): BadRequestError =>
  new BadRequestError(details === undefined ? { status: 400, message } : { status: 400, message, details })
export const notFound = (message = "Not found"): NotFoundError => new NotFoundError({ status: 404, message })
export const unavailable = (message = "Service temporarily unavailable: the store cannot be reached"): UnavailableError =>
  new UnavailableError({ status: 503, message })

type ErrorFor<E> = E extends { readonly _tag: "ValidationError" | "NoEligibleRunner" | "RunnerProbeFailed" } ? BadRequestError
  : E extends { readonly _tag: "TierLimitExceeded" | "ManagedRunnersForbidden" } ? ForbiddenError
  : E extends { readonly _tag: "NotFound" } ? NotFoundError
  : E extends { readonly _tag: "Conflict" } ? ConflictError
  : E extends { readonly _tag: "MissingAuthorization" | "InvalidToken" | "TokenExpired" } ? UnauthorizedError
  : E extends { readonly _tag: "StorageError" } ? UnavailableError
  : never

/** The one mapping from a core error to its HTTP body. */
export const toHttpError = <E extends ApiError>(e: E): ErrorFor<E> => {
  const mapped = (() => {
    switch (e._tag) {
      case "ValidationError":
        return badRequest(e.message, e.details)
      case "NoEligibleRunner":
      case "RunnerProbeFailed":
        return badRequest(e.message)
      case "TierLimitExceeded":
      case "ManagedRunnersForbidden":
        return new ForbiddenError({ status: 403, message: e.message })
      case "NotFound":
        return notFound(e.message)
      case "Conflict":
        return new ConflictError({ status: 409, message: e.message })
      case "MissingAuthorization":
        return new UnauthorizedError({ status: 401, message: "Missing authorization header" })
      case "InvalidToken":
        return new UnauthorizedError({ status: 401, message: "Invalid token" })
      case "TokenExpired":
        return new UnauthorizedError({ status: 401, message: "Token has expired" })
      case "StorageError":
        return unavailable()
    }
  })()
  return mapped as ErrorFor<E>
}
