/**
 * One HTTP exchange with a runner, on undici's `request` directly: the runner's custom headers on
 * every request, one timeout per call handed to undici, and the failure mapping every operation
 * shares (transport errors, timeouts and 5xx are `RunnerUnreachable`; other non-2xx answers are
 * `RunnerRequestFailed`, keeping the runner's text).
 *
 * Why not `@effect/platform`'s HttpClient: a `GET /queue` cost 581 µs of CPU through it with an
 * `Effect.timeout`, 209 µs this way (bench/micro/runner-http.ts; docs/decisions.md, "The runner
 * client"). The fiber's abort signal goes to undici, so interrupting a call aborts its request.
 */
import type { IncomingHttpHeaders } from "node:http"
import { Readable } from "node:stream"
import { type RunnerError, RunnerRequestFailed, type RunnerTarget, RunnerUnreachable } from "@wes/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { type Dispatcher, request } from "undici"

/** How much of a runner's answer an error message quotes. */
export const ERROR_BODY_LIMIT = 300

/** The runner's base URL without a trailing slash (an endpoint may end in `/api`). */
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

/** Milliseconds for undici (0 = no limit). */
export const millis = (d: Duration.Input): number => {
  const ms = Duration.toMillis(d)
  return Number.isFinite(ms) ? Math.max(1, Math.ceil(ms)) : 0
}

/** A request to a runner; `path` is relative to its endpoint (`/queue`). */
export interface Call {
  readonly method: "GET" | "POST"
  readonly path: string
  readonly query?: Readonly<Record<string, string>>
  /** Asks for JSON (every call but a download). */
  readonly acceptJson?: boolean
  /** Sent as JSON. */
  readonly json?: unknown
  /**
   * For a `json` body: asked as undici is about to write the request (a connection is ready);
   * false aborts it before a byte is written, and the call fails.
   */
  readonly fence?: (() => boolean) | undefined
  /** Streamed as is. */
  readonly stream?: { readonly body: Readable; readonly contentType: string }
  /** A 2xx answer longer than this many bytes is refused (its reading stops there). */
  readonly maxBytes?: number
}

/** The one timeout of a call, given to undici. */
export interface Limits {
  /** No answer headers for this long (undici's `headersTimeout`). */
  readonly headers: Duration.Input
  /** No body bytes for this long (undici's `bodyTimeout`). */
  readonly body: Duration.Input
  /** The whole exchange, request body included (an `AbortSignal.timeout`). */
  readonly whole?: Duration.Input
  /** The limit a timeout message names. */
  readonly named: Duration.Input
}

/** An answer read whole. */
export interface Answer {
  readonly what: string
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly text: string
}

/** What went wrong with one request, for messages: `POST /prompt: ...`. */
export const label = (call: Call): string => `${call.method} ${call.path}`

export const unreachable = (runner: RunnerTarget, message: string): RunnerUnreachable =>
  new RunnerUnreachable({ runner_id: runner.id, message })

/** The error for a non-2xx answer, quoting the runner's body. */
export const statusFailure = (runner: RunnerTarget, answer: Answer): RunnerError => {
  const text = snippet(answer.text)
  const message = `${answer.what}: runner answered HTTP ${answer.status}${text === "" ? "" : `: ${text}`}`
  return answer.status >= 500
    ? unreachable(runner, message)
    : new RunnerRequestFailed({ runner_id: runner.id, status: answer.status, message })
}

export const unexpectedBody = (runner: RunnerTarget, what: string, status: number, body: string): RunnerUnreachable =>
  unreachable(runner, `${what}: runner answered HTTP ${status} with an unexpected body: ${snippet(body) || "(empty)"}`)

/** Parses a JSON body; a body that is not JSON means the endpoint is not a working ComfyUI. */
export const readJson = (runner: RunnerTarget, answer: Answer): Effect.Effect<unknown, RunnerUnreachable> =>
  Effect.try({
    try: () => JSON.parse(answer.text) as unknown,
    catch: () => unexpectedBody(runner, answer.what, answer.status, answer.text)
  })

/** A body of a 2xx answer that broke off while being read. */
class BodyReadFailed {
  constructor(readonly cause: unknown) {}
}

/** A body of a 2xx answer longer than the call's `maxBytes`. */
export class BodyTooLarge {
  constructor(readonly limit: number) {}
}

/** A body as undici hands it over: its chunks, and a way to stop reading. */
type Body = AsyncIterable<Uint8Array> & { readonly destroy?: () => unknown }

/**
 * Reads at most `limit` bytes of `body`; more is a `BodyTooLarge` (and the rest is not read).
 * An abort of `signal` stops reading (the body is destroyed, the read fails).
 */
export const readBounded = async (body: Body, limit: number, signal?: AbortSignal): Promise<ReadonlyArray<Uint8Array>> => {
  const stop = () => body.destroy?.()
  signal?.addEventListener("abort", stop, { once: true })
  try {
    const chunks: Array<Uint8Array> = []
    let size = 0
    for await (const chunk of body) {
      size += chunk.byteLength
      if (size > limit) {
        stop()
        throw new BodyTooLarge(limit)
      }
      chunks.push(chunk)
    }
    return chunks
  } finally {
    signal?.removeEventListener("abort", stop)
  }
}

const boundedText = async (body: Body, limit: number): Promise<string> =>
  Buffer.concat(await readBounded(body, limit)).toString("utf8")

const TIMEOUT_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"])

/** undici's headers or body timeout, or the whole-exchange `AbortSignal.timeout`. */
export const isTimeout = (e: unknown): boolean =>
  typeof e === "object" && e !== null &&
  (TIMEOUT_CODES.has((e as { code?: unknown }).code as string) || (e as { name?: unknown }).name === "TimeoutError")

const headersOf = (runner: RunnerTarget, own: Record<string, string>): Record<string, string> => {
  // Lower-cased so a runner's `Content-Type` replaces ours instead of doubling it.
  for (const [name, value] of Object.entries(runner.headers)) own[name.toLowerCase()] = value
  return own
}

/** The request was withheld: its `fence` said no as it was about to be written. */
class Withheld extends Error {}

/**
 * `text` as one chunk that undici pulls when it writes the request, headers included (they go out
 * with the first chunk): the fence is asked then, a few microtasks before the bytes leave. A plain
 * `read()` costs about 8 µs more per post than a string body; `Readable.from` of a generator 30.
 */
const fenced = (text: Buffer, fence: () => boolean): Readable =>
  new Readable({
    read() {
      if (!fence()) return this.destroy(new Withheld("withheld by its fence"))
      this.push(text)
      this.push(null)
    }
  })

const bodyOf = (call: Call, headers: Record<string, string>) => {
  if (call.json === undefined) return call.stream?.body ?? null
  const text = JSON.stringify(call.json)
  if (call.fence === undefined) return text
  const bytes = Buffer.from(text)
  headers["content-length"] = String(bytes.length)
  return fenced(bytes, call.fence)
}

const dispatch = (dispatcher: Dispatcher, runner: RunnerTarget, call: Call, limits: Limits, fiber: AbortSignal) => {
  const query = call.query === undefined ? "" : `?${new URLSearchParams(call.query).toString()}`
  const own: Record<string, string> = call.acceptJson === true ? { accept: "application/json" } : {}
  if (call.json !== undefined) own["content-type"] = "application/json"
  if (call.stream !== undefined) own["content-type"] = call.stream.contentType
  const body = bodyOf(call, own)
  return request(`${baseUrl(runner)}${call.path}${query}`, {
    dispatcher,
    method: call.method,
    headers: headersOf(runner, own),
    body,
    signal: limits.whole === undefined ? fiber : AbortSignal.any([fiber, AbortSignal.timeout(millis(limits.whole))]),
    headersTimeout: millis(limits.headers),
    bodyTimeout: millis(limits.body)
  })
}

const failure = (runner: RunnerTarget, what: string, limits: Limits) => (e: unknown): RunnerUnreachable => {
  if (e instanceof BodyTooLarge) return unreachable(runner, `${what}: the answer is larger than ${e.limit} bytes`)
  const cause = e instanceof BodyReadFailed ? e.cause : e
  if (isTimeout(cause)) return unreachable(runner, `${what}: no answer within ${Duration.format(Duration.fromInputUnsafe(limits.named))}`)
  return unreachable(runner, e instanceof BodyReadFailed ? `${what}: reading the answer failed: ${describeCause(cause)}` : `${what}: ${describeCause(cause)}`)
}

/**
 * Sends `call` and reads the whole answer. The caller goes on with it after one yield: Effect 4
 * resumes a fiber as soon as the promise settles, while the runner's WebSocket events reach their
 * consumer through the scheduler (the queue wakes its taker on the next round). Without the yield
 * an answer would overtake the events that arrived before it (an idle ComfyUI sends a prompt's
 * `execution_start` before the answer to its post); with it, both go in the order they arrived,
 * as under Effect 3, whose scheduler resumed both alike.
 */
export const send = (
  dispatcher: Dispatcher,
  runner: RunnerTarget,
  call: Call,
  limits: Limits
): Effect.Effect<Answer, RunnerUnreachable> => {
  const what = label(call)
  return Effect.tryPromise({
    try: async (signal) => {
      const response = await dispatch(dispatcher, runner, call, limits, signal)
      const ok = response.statusCode >= 200 && response.statusCode < 300
      // A JSON answer must arrive whole. Otherwise the status is what counts: a broken body of a
      // failure just leaves its message shorter, and an empty 200 is read only to free the connection.
      const read = ok && call.maxBytes !== undefined ? boundedText(response.body, call.maxBytes) : response.body.text()
      const text = await read.catch((e: unknown) => {
        if (e instanceof BodyTooLarge) throw e
        if (ok && call.acceptJson === true) throw new BodyReadFailed(e)
        return ""
      })
      return { what, status: response.statusCode, headers: response.headers, text }
    },
    catch: failure(runner, what, limits)
  }).pipe(Effect.tap(() => Effect.yieldNow))
}

/** `send` that expects a 2xx answer. */
export const sendOk = (
  dispatcher: Dispatcher,
  runner: RunnerTarget,
  call: Call,
  limits: Limits
): Effect.Effect<Answer, RunnerError> =>
  Effect.flatMap(
    send(dispatcher, runner, call, limits),
    (answer) => answer.status >= 200 && answer.status < 300 ? Effect.succeed(answer) : Effect.fail(statusFailure(runner, answer))
  )

/** Sends `call` and hands over a 2xx answer's body unread (undici's `bodyTimeout` watches it). */
export const open = (
  dispatcher: Dispatcher,
  runner: RunnerTarget,
  call: Call,
  limits: Limits
): Effect.Effect<{ readonly what: string; readonly headers: IncomingHttpHeaders; readonly body: AsyncIterable<Uint8Array> }, RunnerError> => {
  const what = label(call)
  return Effect.tryPromise({
    try: async (signal) => {
      const response = await dispatch(dispatcher, runner, call, limits, signal)
      if (response.statusCode >= 200 && response.statusCode < 300) {
        return { ok: true as const, what, headers: response.headers, body: response.body as AsyncIterable<Uint8Array> }
      }
      const text = await response.body.text().catch(() => "")
      return { ok: false as const, answer: { what, status: response.statusCode, headers: response.headers, text } }
    },
    catch: failure(runner, what, limits)
  }).pipe(Effect.flatMap((r) => r.ok ? Effect.succeed(r) : Effect.fail(statusFailure(runner, r.answer))))
}
