/**
 * The /v1 API through the typed client of the contract (`makeClient` of @wes/api), with the
 * signed-in token (kept in session storage: it ends with the tab). Every failure becomes an
 * `ApiError` carrying the server's own message and details.
 */
import { makeClient, type WesClient } from "@wes/api"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClientError from "effect/http/HttpClientError"
import * as Schema from "effect/Schema"
import * as SchemaIssue from "effect/SchemaIssue"

const KEY = "wes.token"

export const getToken = (): string | null => sessionStorage.getItem(KEY)
export const setToken = (token: string): void => sessionStorage.setItem(KEY, token)
export const clearToken = (): void => sessionStorage.removeItem(KEY)

export interface FieldIssue {
  readonly field: string
  readonly message: string
}

export class ApiError extends Error {
  constructor(readonly status: number, message: string, readonly details: ReadonlyArray<FieldIssue> = []) {
    super(message)
  }
}

/** Called when a request of the signed-in user answers 401 (token revoked or expired). */
let onUnauthorized: (message: string) => void = () => {}
export const setUnauthorizedHandler = (f: (message: string) => void): void => {
  onUnauthorized = f
}

/** The contract's error body (`{status, message, details?}`): what every declared error decodes to. */
const isErrorBody = (u: unknown): u is { readonly status: number; readonly message: string; readonly details?: ReadonlyArray<FieldIssue> | undefined } =>
  typeof u === "object" && u !== null && "status" in u && typeof u.status === "number" && "message" in u && typeof u.message === "string"

const formatIssues = SchemaIssue.makeFormatterStandardSchemaV1()

/**
 * A failed call as an ApiError: a declared error as the server sent it; an undeclared status
 * with the message of its body, if it has one; a request the client refuses to encode as a 400
 * naming the fields (what the server would answer); a network failure as status 0.
 */
const errorOf = (error: unknown): Effect.Effect<ApiError> => {
  if (isErrorBody(error)) return Effect.succeed(new ApiError(error.status, error.message, error.details ?? []))
  if (HttpClientError.isHttpClientError(error)) {
    const response = error.response
    if (response === undefined) return Effect.succeed(new ApiError(0, "The server cannot be reached"))
    const fallback = new ApiError(response.status, `The server answered ${response.status}`)
    return response.json.pipe(
      Effect.map((body) => (isErrorBody(body) ? new ApiError(response.status, body.message, body.details ?? []) : fallback)),
      Effect.orElseSucceed(() => fallback)
    )
  }
  if (Schema.isSchemaError(error)) {
    const details = formatIssues(error.issue).issues.map((i) => ({ field: (i.path ?? []).map(String).join("."), message: i.message }))
    const first = details[0]
    return Effect.succeed(new ApiError(400, first === undefined ? error.message : `${first.field}: ${first.message}`, details))
  }
  return Effect.succeed(new ApiError(0, error instanceof Error ? error.message : String(error)))
}

/** The client of one token (the last one asked for is kept: the signed-in user's, nearly always). */
let cached: { readonly token: string | null; readonly client: WesClient } | undefined
const clientOf = (token: string | null): WesClient => {
  if (cached?.token !== token) {
    const client = Effect.runSync(makeClient(token === null ? {} : { token }).pipe(Effect.provide(FetchHttpClient.layer)))
    cached = { token, client }
  }
  return cached.client
}

export interface CallOptions {
  /** Another token than the signed-in one (sign-in checks the one typed). */
  readonly token?: string | null | undefined
  /** Aborts the request (and a stream being read). */
  readonly signal?: AbortSignal | undefined
}

/**
 * One use of the typed client (`call((api) => api.workflows.get({ params: { id } }))`), as a
 * promise: the decoded answer, or an ApiError.
 */
export const call = async <A, E>(f: (client: WesClient) => Effect.Effect<A, E>, options: CallOptions = {}): Promise<A> => {
  const token = options.token === undefined ? getToken() : options.token
  const exit = await Effect.runPromiseExit(Effect.suspend(() => f(clientOf(token))), { signal: options.signal })
  if (Exit.isSuccess(exit)) return exit.value
  const error = await Effect.runPromise(errorOf(Cause.squash(exit.cause)))
  if (error.status === 401 && token !== null && token === getToken()) onUnauthorized(error.message)
  throw error
}
