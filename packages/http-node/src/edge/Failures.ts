/**
 * A request's failure as the contract's answer, decided once for the whole server from the
 * declared errors (ApiErrors.ts): a value one of the declared error schemas accepts answers with
 * that schema's status and body; a request the declared schemas reject is the 400 naming each
 * field; a body reader's refusal (a defect carrying a `ValidationError` or `InternalError`) its
 * own answer; anything else a 500 with no details, logged.
 */
import type * as HttpApi from "effect/unstable/httpapi/HttpApi"
import type * as Context from "effect/Context"
import * as HttpApiSchema from "effect/unstable/httpapi/HttpApiSchema"
import * as HttpServerResponse from "effect/unstable/http/HttpServerResponse"
import { fromDecodeIssues, ValidationError } from "@wes/core"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { InternalError } from "@wes/api"

/** A JSON answer, written by node from the string (no intermediate bytes). */
export const jsonResponse = (body: unknown, status: number, headers?: Record<string, string>): HttpServerResponse.HttpServerResponse => {
  const text = JSON.stringify(body)
  return HttpServerResponse.raw(text, {
    status,
    contentType: "application/json",
    contentLength: Buffer.byteLength(text),
    ...(headers === undefined ? {} : { headers })
  })
}

interface DeclaredError {
  readonly is: (u: unknown) => boolean
  readonly encode: (u: unknown) => unknown
  readonly status: number
  readonly empty: boolean
}

/** Every error schema the API, its groups and their endpoints declare, each once. */
/** The API as the server holds it (`HttpApi.Api`). */
type Api = Context.Tag.Service<HttpApi.Api>["api"]

const declaredErrors = (api: Api): ReadonlyArray<DeclaredError> => {
  const schemas = new Set<Schema.Schema.Any>()
  HttpApiSchema.deunionize(schemas, api.errorSchema as unknown as Schema.Schema.Any)
  for (const group of Object.values(api.groups)) {
    for (const endpoint of Object.values(group.endpoints)) HttpApiSchema.deunionize(schemas, endpoint.errorSchema)
    HttpApiSchema.deunionize(schemas, group.errorSchema)
  }
  return [...schemas].map((schema) => ({
    is: Schema.is(Schema.toType(schema)),
    encode: Schema.encodeUnknownSync(schema as Schema.Schema<unknown, unknown>),
    status: HttpApiSchema.getStatusErrorAST(schema.ast),
    empty: HttpApiSchema.isVoid(schema.ast)
  }))
}

export type FailureResponse = (cause: Cause.Cause<unknown>) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown>

/** Turns the failures of a request into its answer; an interruption (the client left) stays one. */
export const failureResponse = (api: Api): FailureResponse => {
  const declared = declaredErrors(api)
  const answer = (error: unknown): HttpServerResponse.HttpServerResponse | undefined => {
    const value = ParseResult.isParseError(error) ? fromDecodeIssues(ParseResult.ArrayFormatter.formatErrorSync(error)) : error
    const match = declared.find((d) => d.is(value))
    if (match === undefined) return undefined
    return match.empty ? HttpServerResponse.empty({ status: match.status }) : jsonResponse(match.encode(value), match.status)
  }
  const internal = (cause: Cause.Cause<unknown>) =>
    Effect.as(
      Effect.logError("unexpected error", cause),
      answer(new InternalError({ status: 500, message: "Internal server error" })) ??
        jsonResponse({ status: 500, message: "Internal server error" }, 500)
    )
  return (cause) => {
    if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
    const failure = Cause.failureOption(cause)
    if (Option.isSome(failure)) {
      const response = answer(failure.value)
      return response === undefined ? internal(cause) : Effect.succeed(response)
    }
    const defect = Cause.dieOption(cause)
    if (Option.isSome(defect) && (defect.value instanceof ValidationError || defect.value instanceof InternalError)) {
      const response = answer(defect.value)
      if (response !== undefined) return Effect.succeed(response)
    }
    return internal(cause)
  }
}
