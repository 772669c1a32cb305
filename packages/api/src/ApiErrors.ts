/**
 * The contract's error bodies, `{status, message}` (+ `details` for 400), and the errors the API
 * declares: one schema per status whose wire side is that body and whose value side is every
 * error that answers with it, core's own (`ValidationError`, `WorkflowNotFound`, `StorageError`,
 * ...) included. Each core error declares its status once, where it is declared (a static `status`
 * in core's Errors.ts); the schemas here take core's `apiErrors` of their status, so a new error
 * needs no entry here. Handlers fail with core's errors as they are; the server encodes each with
 * the one declared schema for its status, so the mapping to the contract is written here once.
 */
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import { apiErrors, FieldIssue, type MissingCapabilities } from "@wes/core"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"

/**
 * The body of one status. The struct carries the identifier and description, so the OpenAPI
 * document names its component after the body (`BadRequest`), not after the class's encoded side.
 * The classes' own identifiers are distinct from every other class's (`@wes/api/...`): Effect
 * recognizes a class's instances by its identifier, and core's `Conflict` error would otherwise
 * pass for the 409 body.
 */
const body = <const Fields extends Schema.Struct.Fields>(identifier: string, description: string, fields: Fields) =>
  Schema.Struct(fields).annotate({ identifier, description })

export class BadRequestError extends Schema.Class<BadRequestError>("@wes/api/BadRequestError")(
  body("BadRequest", "The request is invalid; `details` names the fields.", {
    status: Schema.Literal(400),
    message: Schema.String,
    details: Schema.optionalKey(Schema.Array(FieldIssue))
  }),
  { httpApiStatus: 400 }
) {}

export class UnauthorizedError extends Schema.Class<UnauthorizedError>("@wes/api/UnauthorizedError")(
  body("Unauthorized", "Missing, invalid or expired token.", {
    status: Schema.Literal(401),
    message: Schema.Literals(["Missing authorization header", "Invalid token", "Token has expired"])
  }),
  { httpApiStatus: 401 }
) {}

export class ForbiddenError extends Schema.Class<ForbiddenError>("@wes/api/ForbiddenError")(
  body("Forbidden", "A tier limit or permission; the message names it.", {
    status: Schema.Literal(403),
    message: Schema.String
  }),
  { httpApiStatus: 403 }
) {}

export class NotFoundError extends Schema.Class<NotFoundError>("@wes/api/NotFoundError")(
  body("NotFound", "Missing, or not the caller's.", {
    status: Schema.Literal(404),
    message: Schema.String
  }),
  { httpApiStatus: 404 }
) {}

const METHOD_NOT_ALLOWED = "The path exists, but not with this method; see Allow."

export class MethodNotAllowedError extends Schema.Class<MethodNotAllowedError>("@wes/api/MethodNotAllowedError")(
  body("MethodNotAllowed", METHOD_NOT_ALLOWED, {
    status: Schema.Literal(405),
    message: Schema.String
  }),
  { httpApiStatus: 405, description: METHOD_NOT_ALLOWED }
) {}

export class ConflictError extends Schema.Class<ConflictError>("@wes/api/ConflictError")(
  body("Conflict", "The resource's state does not allow this.", {
    status: Schema.Literal(409),
    message: Schema.String
  }),
  { httpApiStatus: 409 }
) {}

const GONE = "The output's file was deleted by retention; `expired_at` says when its retention ended."

export class GoneError extends Schema.Class<GoneError>("@wes/api/GoneError")(
  body("Gone", GONE, {
    status: Schema.Literal(410),
    message: Schema.String,
    expired_at: Schema.String.annotate({ description: "When the output's retention ended (ISO 8601)" })
  }),
  { httpApiStatus: 410, description: GONE }
) {}

const RANGE_NOT_SATISFIABLE = "The `Range` starts past the end of the file; `Content-Range: bytes */<size>` gives its size."

export class RangeNotSatisfiableError extends Schema.Class<RangeNotSatisfiableError>("@wes/api/RangeNotSatisfiableError")(
  body("RangeNotSatisfiable", RANGE_NOT_SATISFIABLE, {
    status: Schema.Literal(416),
    message: Schema.String
  }),
  { httpApiStatus: 416, description: RANGE_NOT_SATISFIABLE }
) {}

const RATE_LIMITED = "Rate limit exceeded; see Retry-After."

export class RateLimitedError extends Schema.Class<RateLimitedError>("@wes/api/RateLimitedError")(
  body("TooManyRequests", RATE_LIMITED, {
    status: Schema.Literal(429),
    message: Schema.Literal("Rate limit exceeded")
  }),
  { httpApiStatus: 429, description: RATE_LIMITED }
) {}

const HEADERS_TOO_LARGE = "The request line and headers exceed 16 KB (answered by the HTTP parser, before any route)."

export class HeadersTooLargeError extends Schema.Class<HeadersTooLargeError>("@wes/api/HeadersTooLargeError")(
  body("RequestHeaderFieldsTooLarge", HEADERS_TOO_LARGE, {
    status: Schema.Literal(431),
    message: Schema.String
  }),
  { httpApiStatus: 431, description: HEADERS_TOO_LARGE }
) {}

const INTERNAL = "An unexpected error."

export class InternalError extends Schema.Class<InternalError>("@wes/api/InternalError")(
  body("InternalServerError", INTERNAL, {
    status: Schema.Literal(500),
    message: Schema.String
  }),
  { httpApiStatus: 500, description: INTERNAL }
) {}

export class UnavailableError extends Schema.Class<UnavailableError>("@wes/api/UnavailableError")(
  body("ServiceUnavailable", "A dependency (the store) is unavailable; retry later.", {
    status: Schema.Literal(503),
    message: Schema.String
  }),
  { httpApiStatus: 503 }
) {}

/** The core errors (classes) that declare `status` as theirs. */
type WithStatus<S extends number> = Extract<(typeof apiErrors)[number], { readonly status: S }>

/**
 * The declared error of one status: on the wire `body` (its class's JSON), as a value either the
 * body itself or any of core's errors that declare this status, each turned into the body by
 * `toBody` when it is sent. A client decodes the body class.
 */
const declared = <B extends Schema.Top, const S extends number>(
  body: B,
  status: S,
  toBody: (cause: WithStatus<S>["Type"]) => B["Type"]
) => {
  const causes = apiErrors.filter((e): e is WithStatus<S> => e.status === status)
  const isBody = Schema.is(Schema.toType(body))
  const isCause = (e: B["Type"] | WithStatus<S>["Type"]): e is WithStatus<S>["Type"] => !isBody(e)
  return body.pipe(
    Schema.decodeTo(
      Schema.Union([Schema.toType(body), ...causes.map((c) => Schema.toType(c))]),
      SchemaTransformation.transform<B["Type"] | WithStatus<S>["Type"], B["Type"]>({
        decode: (b) => b,
        encode: (e) => (isCause(e) ? toBody(e) : e)
      })
    ),
    HttpApiSchema.status(status)
  )
}

/**
 * 400: the request is malformed (core's validation, no runner for the tags, no runner with the
 * workflow's nodes and models: `details` has one entry per runner, a runner that does not answer
 * the probe). Its response is described by its body (the other statuses' are "Error").
 */
export const BadRequest = declared(BadRequestError, 400, (e) =>
  new BadRequestError(
    e._tag === "ValidationError"
      ? { status: 400, message: e.message, details: e.details }
      : e._tag === "MissingCapabilities"
      ? { status: 400, message: e.message, details: e.runners.map(runnerLacks) }
      : { status: 400, message: e.message }
  )).annotate({ description: "The request is invalid; `details` names the fields." })

/** One runner's lack as a 400 detail: `runner:<name>` and what it lacks. */
const runnerLacks = (r: MissingCapabilities["runners"][number]) => ({
  field: `runner:${r.runner_id}`,
  message: `runner ${JSON.stringify(r.runner_name)} lacks ` + [
    r.node_classes.length === 0 ? undefined : `node classes: ${r.node_classes.join(", ")}`,
    r.model_files.length === 0 ? undefined : `model files: ${r.model_files.join(", ")}`
  ].filter((s) => s !== undefined).join("; ")
})

/** 401: no token, an unknown one, or an expired one (the contract's three messages). */
export const Unauthorized = declared(UnauthorizedError, 401, (e) =>
  new UnauthorizedError({
    status: 401,
    message: e._tag === "MissingAuthorization" ? "Missing authorization header" : e._tag === "InvalidToken" ? "Invalid token" : "Token has expired"
  }))

/** 403: a tier limit, or no access to managed runners. */
export const Forbidden = declared(ForbiddenError, 403, (e) =>
  new ForbiddenError({ status: 403, message: e.message }))

/** 404: missing, or someone else's. */
export const NotFoundStatus = declared(NotFoundError, 404, (e) => new NotFoundError({ status: 404, message: e.message }))

/** 409: the resource's state does not allow it. */
export const ConflictStatus = declared(ConflictError, 409, (e) => new ConflictError({ status: 409, message: e.message }))

/** 410: an output whose file retention deleted, with the date its retention ended. */
export const Gone = declared(GoneError, 410, (e) => new GoneError({ status: 410, message: e.message, expired_at: e.expired_at }))

/** 503: the store cannot be reached, or the server is stopping. */
export const Unavailable = declared(UnavailableError, 503, () => unavailable())

export const notFound = (message = "Not found"): NotFoundError => new NotFoundError({ status: 404, message })
export const unavailable = (message = "Service temporarily unavailable: the store cannot be reached"): UnavailableError =>
  new UnavailableError({ status: 503, message })
