/**
 * One HTTP exchange with a runner: its custom headers on every request, a timeout, and the
 * failure mapping every operation shares (transport errors, timeouts and 5xx are
 * `RunnerUnreachable`; other non-2xx answers are `RunnerRequestFailed`, keeping the runner's text).
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import type * as HttpClientError from "@effect/platform/HttpClientError"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import { type RunnerError, RunnerRequestFailed, type RunnerTarget, RunnerUnreachable } from "@wes/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"

/** How much of a runner's answer an error message quotes. */
export const ERROR_BODY_LIMIT = 300

/** The runner's base URL without a trailing slash. */
export const baseUrl = (runner: RunnerTarget): string => runner.endpoint.replace(/\/+$/, "")

/** Collapses whitespace and cuts `text` to `limit` characters. */
export const snippet = (text: string, limit = ERROR_BODY_LIMIT): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > limit ? `${flat.slice(0, limit)}…` : flat
}

/** The most specific message in an error's `cause` chain (e.g. `connect ECONNREFUSED 127.0.0.1:8188`). */
export const describeCause = (cause: unknown): string => {
  let best = "unknown error"
  let current: unknown = cause
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth++) {
    if (current instanceof Error || (typeof current === "object" && "message" in current)) {
      const e = current as { message?: unknown; code?: unknown; cause?: unknown }
      const message = typeof e.message === "string" && e.message !== "" ? e.message : undefined
      const code = typeof e.code === "string" ? e.code : undefined
      if (message !== undefined) best = code !== undefined && !message.includes(code) ? `${message} (${code})` : message
      current = e.cause
    } else {
      if (typeof current === "string" && current !== "") best = current
      break
    }
  }
  return best
}

/** What went wrong with one request, for messages: `POST /prompt: ...`. */
export const label = (request: HttpClientRequest.HttpClientRequest): string => {
  const path = request.url.replace(/^https?:\/\/[^/]+/, "")
  return `${request.method} ${path === "" ? "/" : path}`
}

export const unreachable = (runner: RunnerTarget, message: string): RunnerUnreachable =>
  new RunnerUnreachable({ runner_id: runner.id, message })

/** The error for a non-2xx answer, quoting the runner's body. */
export const statusFailure = (
  runner: RunnerTarget,
  what: string,
  response: HttpClientResponse.HttpClientResponse
): Effect.Effect<never, RunnerError> =>
  response.text.pipe(
    // The status alone is the failure; a body that cannot be read just leaves the message shorter.
    Effect.orElseSucceed(() => ""),
    Effect.flatMap((body): Effect.Effect<never, RunnerError> => {
      const text = snippet(body)
      const message = `${what}: runner answered HTTP ${response.status}${text === "" ? "" : `: ${text}`}`
      return response.status >= 500
        ? Effect.fail(unreachable(runner, message))
        : Effect.fail(new RunnerRequestFailed({ runner_id: runner.id, status: response.status, message }))
    })
  )

/** Reads a JSON body; a body that is not JSON means the endpoint is not a working ComfyUI. */
export const readJson = (
  runner: RunnerTarget,
  what: string,
  response: HttpClientResponse.HttpClientResponse
): Effect.Effect<unknown, RunnerUnreachable> =>
  response.text.pipe(
    Effect.mapError((e) => unreachable(runner, `${what}: reading the answer failed: ${describeCause(e)}`)),
    Effect.flatMap((text) =>
      Effect.try({
        try: () => JSON.parse(text) as unknown,
        catch: () => unexpectedBody(runner, what, response.status, text)
      })
    )
  )

export const unexpectedBody = (runner: RunnerTarget, what: string, status: number, body: string): RunnerUnreachable =>
  unreachable(runner, `${what}: runner answered HTTP ${status} with an unexpected body: ${snippet(body) || "(empty)"}`)

/**
 * Sends `request` (a path relative to the runner) with the runner's headers, then `handle`s the
 * response; the whole exchange, body included, must finish within `timeout`.
 */
export const exchange = <A, E>(
  http: HttpClient.HttpClient,
  runner: RunnerTarget,
  request: HttpClientRequest.HttpClientRequest,
  timeout: Duration.DurationInput,
  handle: (response: HttpClientResponse.HttpClientResponse, what: string) => Effect.Effect<A, E>
): Effect.Effect<A, E | RunnerUnreachable> => {
  const what = label(request)
  const full = request.pipe(
    HttpClientRequest.prependUrl(baseUrl(runner)),
    HttpClientRequest.setHeaders(runner.headers)
  )
  return http.execute(full).pipe(
    Effect.mapError((e: HttpClientError.HttpClientError) => unreachable(runner, `${what}: ${describeCause(e.cause ?? e)}`)),
    Effect.flatMap((response) => handle(response, what)),
    Effect.timeoutFail({
      duration: timeout,
      onTimeout: () => unreachable(runner, `${what}: no answer within ${Duration.format(Duration.decode(timeout))}`)
    })
  )
}

/** `exchange` that expects a 2xx answer and hands over the response. */
export const exchangeOk = <A, E>(
  http: HttpClient.HttpClient,
  runner: RunnerTarget,
  request: HttpClientRequest.HttpClientRequest,
  timeout: Duration.DurationInput,
  handle: (response: HttpClientResponse.HttpClientResponse, what: string) => Effect.Effect<A, E>
): Effect.Effect<A, E | RunnerError> =>
  exchange(http, runner, request, timeout, (response, what): Effect.Effect<A, E | RunnerError> =>
    response.status >= 200 && response.status < 300 ? handle(response, what) : statusFailure(runner, what, response))
