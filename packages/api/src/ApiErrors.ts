/**
 * The contract's error bodies, `{status, message}` (+ `details` for 400), and the errors the API
 * declares: one schema per status whose wire side is that body and whose value side is every
 * error that answers with it, core's own (`ValidationError`, `NotFound`, `StorageError`, ...)
 * included. Handlers fail with core's errors as they are; the server encodes each with the one
 * declared schema for its status, so the mapping to the contract is written here once.
 */
import * as HttpApiSchema from "effect/unstable/httpapi/HttpApiSchema"
import {
  Conflict,
  FieldIssue,
  InvalidToken,
  ManagedRunnersForbidden,
  MissingAuthorization,
  MissingCapabilities,
  NoEligibleRunner,
  NotFound,
  RunnerProbeFailed,
  StorageError,
  TierLimitExceeded,
  TokenExpired,
  ValidationError
} from "@wes/core"
import * as Schema from "effect/Schema"

export class BadRequestError extends Schema.Class<BadRequestError>("BadRequest")({
  status: Schema.Literal(400),
  message: Schema.String,
  details: Schema.optional(Schema.Array(FieldIssue))
}, HttpApiSchema.annotate({ status: 400, description: "The request is invalid; `details` names the fields." })) {}

export class UnauthorizedError extends Schema.Class<UnauthorizedError>("Unauthorized")({
  status: Schema.Literal(401),
  message: Schema.Literals(["Missing authorization header", "Invalid token", "Token has expired"])
}, HttpApiSchema.annotate({ status: 401, description: "Missing, invalid or expired token." })) {}

export class ForbiddenError extends Schema.Class<ForbiddenError>("Forbidden")({
  status: Schema.Literal(403),
  message: Schema.String
}, HttpApiSchema.annotate({ status: 403, description: "A tier limit or permission; the message names it." })) {}

export class NotFoundError extends Schema.Class<NotFoundError>("NotFound")({
  status: Schema.Literal(404),
  message: Schema.String
}, HttpApiSchema.annotate({ status: 404, description: "Missing, or not the caller's." })) {}

export class MethodNotAllowedError extends Schema.Class<MethodNotAllowedError>("MethodNotAllowed")({
  status: Schema.Literal(405),
  message: Schema.String
}, HttpApiSchema.annotate({ status: 405, description: "The path exists, but not with this method; see Allow." })) {}

export class ConflictError extends Schema.Class<ConflictError>("Conflict")({
  status: Schema.Literal(409),
  message: Schema.String
}, HttpApiSchema.annotate({ status: 409, description: "The resource's state does not allow this." })) {}

export class RateLimitedError extends Schema.Class<RateLimitedError>("TooManyRequests")({
  status: Schema.Literal(429),
  message: Schema.Literal("Rate limit exceeded")
}, HttpApiSchema.annotate({ status: 429, description: "Rate limit exceeded; see Retry-After." })) {}

export class HeadersTooLargeError extends Schema.Class<HeadersTooLargeError>("RequestHeaderFieldsTooLarge")({
  status: Schema.Literal(431),
  message: Schema.String
}, HttpApiSchema.annotate({
  status: 431,
  description: "The request line and headers exceed 16 KB (answered by the HTTP parser, before any route)."
})) {}

export class InternalError extends Schema.Class<InternalError>("InternalServerError")({
  status: Schema.Literal(500),
  message: Schema.String
}, HttpApiSchema.annotate({ status: 500, description: "An unexpected error." })) {}

export class UnavailableError extends Schema.Class<UnavailableError>("ServiceUnavailable")({
  status: Schema.Literal(503),
  message: Schema.String
}, HttpApiSchema.annotate({ status: 503, description: "A dependency (the store) is unavailable; retry later." })) {}

/**
 * The declared error of one status: on the wire `body` (its class's JSON), as a value either the
 * body itself or any of `causes`, each turned into the body by `toBody` when it is sent.
 */
const declared = <B extends Schema.Schema.AnyNoContext, const C extends ReadonlyArray<Schema.Schema.AnyNoContext>>(
  body: B,
  status: number,
  causes: C,
  toBody: (cause: Schema.Schema.Type<C[number]>) => Schema.Schema.Type<B>
) => {
  const isBody = Schema.is(Schema.toType(body))
  return Schema.transform(body, Schema.Union([Schema.toType(body), ...causes.map((c) => Schema.toType(c))]), {
    strict: false,
    decode: (b) => b,
    encode: (e) => (isBody(e) ? e : toBody(e as Schema.Schema.Type<C[number]>))
  }).annotate(HttpApiSchema.annotate({ status }))
}

/**
 * 400: the request is malformed (core's validation, no runner for the tags, no runner with the
 * workflow's nodes and models: `details` has one entry per runner, a runner that does not answer
 * the probe).
 */
export const BadRequest = declared(BadRequestError, 400, [ValidationError, NoEligibleRunner, MissingCapabilities, RunnerProbeFailed], (e) =>
  new BadRequestError(
    e._tag === "ValidationError"
      ? { status: 400, message: e.message, details: e.details }
      : e._tag === "MissingCapabilities"
      ? { status: 400, message: e.message, details: e.runners.map(runnerLacks) }
      : { status: 400, message: e.message }
  ))

/** One runner's lack as a 400 detail: `runner:<name>` and what it lacks. */
const runnerLacks = (r: MissingCapabilities["runners"][number]) => ({
  field: `runner:${r.runner_id}`,
  message: `runner ${JSON.stringify(r.runner_name)} lacks ` + [
    r.node_classes.length === 0 ? undefined : `node classes: ${r.node_classes.join(", ")}`,
    r.model_files.length === 0 ? undefined : `model files: ${r.model_files.join(", ")}`
  ].filter((s) => s !== undefined).join("; ")
})

/** 401: no token, an unknown one, or an expired one (the contract's three messages). */
export const Unauthorized = declared(UnauthorizedError, 401, [MissingAuthorization, InvalidToken, TokenExpired], (e) =>
  new UnauthorizedError({
    status: 401,
    message: e._tag === "MissingAuthorization" ? "Missing authorization header" : e._tag === "InvalidToken" ? "Invalid token" : "Token has expired"
  }))

/** 403: a tier limit, or no access to managed runners. */
export const Forbidden = declared(ForbiddenError, 403, [TierLimitExceeded, ManagedRunnersForbidden], (e) =>
  new ForbiddenError({ status: 403, message: e.message }))

/** 404: missing, or someone else's. */
export const NotFoundStatus = declared(NotFoundError, 404, [NotFound], (e) => new NotFoundError({ status: 404, message: e.message }))

/** 409: the resource's state does not allow it. */
export const ConflictStatus = declared(ConflictError, 409, [Conflict], (e) => new ConflictError({ status: 409, message: e.message }))

/** 503: the store cannot be reached, or the server is stopping. */
export const Unavailable = declared(UnavailableError, 503, [StorageError], () => unavailable())

export const notFound = (message = "Not found"): NotFoundError => new NotFoundError({ status: 404, message })
export const unavailable = (message = "Service temporarily unavailable: the store cannot be reached"): UnavailableError =>
  new UnavailableError({ status: 503, message })
