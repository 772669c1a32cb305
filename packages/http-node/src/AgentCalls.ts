/**
 * Requests to an agent's own endpoints (`/status`, `/provision`, `/cleanup`: AgentProtocol.ts) on
 * its HTTP/2 session, bounded: a JSON answer of at most `maxBytes`, within `timeoutMs`; NDJSON
 * lines of at most `maxBytes` each, with at most `idleMs` between them. Interrupting a call
 * cancels its stream (RST_STREAM), so the agent stops the work too.
 */
import type { ClientHttp2Session, ClientHttp2Stream } from "node:http2"
import * as http2 from "node:http2"
import { StringDecoder } from "node:string_decoder"
import * as Effect from "effect/Effect"

/** A call that did not give a usable answer; `message` says why, for the runner's error. */
export class AgentCallFailed extends Error {
  override readonly name = "AgentCallFailed"
}

const { HTTP2_HEADER_METHOD, HTTP2_HEADER_PATH, HTTP2_HEADER_STATUS, HTTP2_HEADER_CONTENT_TYPE, NGHTTP2_CANCEL } = http2.constants

interface Call {
  readonly method: "GET" | "POST"
  readonly path: string
  readonly body?: unknown
}

/** Opens the request; `signal` cancels it. */
const open = (session: ClientHttp2Session, call: Call, signal: AbortSignal): ClientHttp2Stream => {
  if (session.closed || session.destroyed) throw new AgentCallFailed("the agent's connection is closed")
  const headers: http2.OutgoingHttpHeaders = { [HTTP2_HEADER_METHOD]: call.method, [HTTP2_HEADER_PATH]: call.path }
  if (call.body !== undefined) headers[HTTP2_HEADER_CONTENT_TYPE] = "application/json"
  const stream = session.request(headers, { endStream: call.body === undefined })
  if (call.body !== undefined) stream.end(JSON.stringify(call.body))
  const cancel = () => stream.close(NGHTTP2_CANCEL)
  signal.addEventListener("abort", cancel, { once: true })
  stream.once("close", () => signal.removeEventListener("abort", cancel))
  return stream
}

/**
 * Why answers are read with listeners attached as soon as the request is made: over the
 * WebSocket, an answer's HEADERS, DATA and END_STREAM often arrive in one read, and node closes
 * the stream before a reader that starts after the `response` event has taken the data (the
 * async iterator then fails with "Premature close"). Read in flowing mode, nothing is lost.
 */

/** The whole body, at most `maxBytes` (more cancels the stream). */
const collect = (stream: ClientHttp2Stream, maxBytes: number): Promise<Buffer> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    let ended = false
    stream.on("data", (chunk: Buffer) => {
      if (size > maxBytes) return
      size += chunk.length
      if (size > maxBytes) {
        stream.close(NGHTTP2_CANCEL)
        return reject(new AgentCallFailed(`the answer is larger than ${maxBytes} bytes`))
      }
      chunks.push(chunk)
    })
    stream.once("end", () => {
      ended = true
      resolve(Buffer.concat(chunks))
    })
    stream.once("error", (e) => reject(new AgentCallFailed(e.message)))
    stream.once("close", () => ended || reject(new AgentCallFailed("the agent closed the answer before its end")))
  })

/** The answer's status, once its headers arrived. */
const statusOf = (stream: ClientHttp2Stream): Promise<number> =>
  new Promise((resolve, reject) => {
    stream.once("response", (headers) => resolve(Number(headers[HTTP2_HEADER_STATUS])))
    stream.once("error", (e) => reject(new AgentCallFailed(e.message)))
    stream.once("close", () => reject(new AgentCallFailed("the agent closed the request without an answer")))
  })

/** Fails the stream when it is silent for `ms` (the timer restarts on every chunk). */
const watchIdle = (stream: ClientHttp2Stream, ms: number, what: string) => {
  stream.setTimeout(ms, () => stream.destroy(new AgentCallFailed(`${what}: no answer from the agent within ${ms} ms`)))
}

const failedWith = (what: string) => (e: unknown): AgentCallFailed =>
  e instanceof AgentCallFailed
    ? new AgentCallFailed(`${what}: ${e.message}`)
    : new AgentCallFailed(`${what}: ${e instanceof Error ? e.message : String(e)}`)

/** A JSON call: its 2xx answer parsed (at most `maxBytes`), within `timeoutMs`. */
export const callJson = (
  session: ClientHttp2Session,
  call: Call,
  limits: { readonly maxBytes: number; readonly timeoutMs: number }
): Effect.Effect<unknown, AgentCallFailed> => {
  const what = `${call.method} ${call.path}`
  return Effect.tryPromise({
    try: async (signal) => {
      const stream = open(session, call, AbortSignal.any([signal, AbortSignal.timeout(limits.timeoutMs)]))
      watchIdle(stream, limits.timeoutMs, what)
      const [status, body] = await Promise.all([statusOf(stream), collect(stream, limits.maxBytes)])
      const text = body.toString("utf8")
      if (status < 200 || status >= 300) throw new AgentCallFailed(`the agent answered HTTP ${status}: ${text.slice(0, 300)}`)
      try {
        return JSON.parse(text) as unknown
      } catch {
        throw new AgentCallFailed("the agent's answer is not JSON")
      }
    },
    catch: failedWith(what)
  })
}

/** The body's lines as they arrive, queued (at most `maxBytes` of them waiting, and per line). */
const linesOf = (stream: ClientHttp2Stream, maxBytes: number) => {
  const queue: Array<string> = []
  const decoder = new StringDecoder("utf8")
  let partial = ""
  let queued = 0
  let done = false
  let failure: Error | undefined
  let notify: (() => void) | undefined
  const wake = () => {
    const n = notify
    notify = undefined
    n?.()
  }
  const push = (line: string) => {
    if (line === "") return
    queue.push(line)
    queued += line.length
  }
  stream.on("data", (chunk: Buffer) => {
    partial += decoder.write(chunk)
    let newline: number
    while ((newline = partial.indexOf("\n")) >= 0) {
      push(partial.slice(0, newline).trim())
      partial = partial.slice(newline + 1)
    }
    if (failure === undefined && (partial.length > maxBytes || queued > maxBytes)) {
      failure = new AgentCallFailed(`the answer's lines exceed ${maxBytes} bytes`)
      stream.close(NGHTTP2_CANCEL)
    }
    wake()
  })
  stream.once("end", () => {
    push((partial + decoder.end()).trim())
    done = true
    wake()
  })
  stream.once("error", (e) => {
    failure ??= new AgentCallFailed(e.message)
    wake()
  })
  stream.once("close", () => {
    if (!done) failure ??= new AgentCallFailed("the agent closed the answer before its end")
    wake()
  })
  /** The next line; undefined at the end. */
  return async (): Promise<string | undefined> => {
    for (;;) {
      const line = queue.shift()
      if (line !== undefined) {
        queued -= line.length
        return line
      }
      if (failure !== undefined) throw failure
      if (done) return undefined
      await new Promise<void>((resolve) => (notify = resolve))
    }
  }
}

/**
 * An NDJSON call: `onLine` gets each line of its 2xx answer, in order (the next once it
 * returned); a line longer than `maxBytes`, as many bytes waiting, or a silence of `idleMs` fails it.
 */
export const callLines = (
  session: ClientHttp2Session,
  call: Call,
  limits: { readonly maxBytes: number; readonly idleMs: number },
  onLine: (line: string) => Promise<void>
): Effect.Effect<void, AgentCallFailed> => {
  const what = `${call.method} ${call.path}`
  return Effect.tryPromise({
    try: async (signal) => {
      const stream = open(session, call, signal)
      watchIdle(stream, limits.idleMs, what)
      const next = linesOf(stream, limits.maxBytes)
      const status = await statusOf(stream)
      if (status < 200 || status >= 300) {
        stream.close(NGHTTP2_CANCEL)
        throw new AgentCallFailed(`the agent answered HTTP ${status}`)
      }
      for (let line = await next(); line !== undefined; line = await next()) await onLine(line)
    },
    catch: failedWith(what)
  })
}
