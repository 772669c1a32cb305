/**
 * Structured logs: one JSON object per line. Requests are logged once each with method, path
 * (never the query string), status, duration, request id and (once authenticated) user id;
 * headers, and so tokens, are never logged.
 */
import { httpDuration, httpRequests } from "@wes/core"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpServerRequest from "effect/http/HttpServerRequest"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Metric from "effect/Metric"
import * as References from "effect/References"
import { randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"

/** Where log lines go (stdout by default; tests capture them). */
export type LogSink = (line: string) => void

const stdout: LogSink = (line) => void process.stdout.write(line + "\n")

/** Each request's record, by the server's own request object (the `source` of its HttpServerRequest). */
const records = new WeakMap<object, RequestRecord>()

/** The request log's record of a request (undefined: the request log did not see it). */
export const requestRecord = (request: HttpServerRequest.HttpServerRequest): RequestRecord | undefined => records.get(request.source)

/** A logger that writes flat JSON lines: time, level, msg, then every field and annotation. */
export const jsonLogger = (sink: LogSink = stdout): Logger.Logger<unknown, void> =>
  Logger.make(({ cause, date, fiber, logLevel, message }) => {
    const parts = Array.isArray(message) ? message : [message]
    const line: Record<string, unknown> = { time: date.toISOString(), level: logLevel.toLowerCase() }
    const text: Array<string> = []
    for (const part of parts) {
      if (typeof part === "object" && part !== null && !Array.isArray(part)) Object.assign(line, part)
      else text.push(String(part))
    }
    line["msg"] = text.join(" ")
    for (const [key, value] of Object.entries(fiber.getRef(References.CurrentLogAnnotations))) line[key] = value
    // A line written while a request runs names the request.
    if (line["request_id"] === undefined) {
      const request = Context.getOrUndefined(fiber.context, HttpServerRequest.HttpServerRequest)
      const record = request === undefined ? undefined : records.get(request.source)
      if (record !== undefined) line["request_id"] = record.id
    }
    if (cause.reasons.length > 0) line["error"] = Cause.pretty(cause)
    sink(JSON.stringify(line))
  })

/** Replaces the default logger with JSON lines (log lines still become events of the current span). */
export const jsonLoggerLayer = (sink?: LogSink): Layer.Layer<never> => Logger.layer([jsonLogger(sink), Logger.tracerLogger])

const pathOf = (url: string): string => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

/**
 * Writes info lines from node's callbacks: synchronously, to the loggers (and at the minimum
 * level) installed where this runs, with the annotations there and a request id. No fiber per
 * line: the request log runs on every request. (Not as span events: no span is current there.)
 */
export const infoLines: Effect.Effect<(message: string, fields: Record<string, unknown>, requestId: string) => void> =
  Effect.withFiber((fiber) => {
    const loggers = [...fiber.getRef(Logger.CurrentLoggers)].filter((logger) => logger !== Logger.tracerLogger)
    const logged = LogLevel.isGreaterThanOrEqualTo("Info", fiber.getRef(References.MinimumLogLevel))
    return Effect.succeed((message, fields, requestId) => {
      if (!logged) return
      const options: Logger.Options<unknown> = {
        message: [message, { ...fields, request_id: requestId }],
        logLevel: "Info",
        cause: Cause.empty,
        fiber,
        date: new Date()
      }
      for (const logger of loggers) logger.log(options)
    })
  })

/** An `X-Request-Id` a client (or a proxy) sent, if it is a sane one. */
const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/

/** What the request log knows of one request, shared by every view of it (found from the request: `requestRecord`). */
export interface RequestRecord {
  readonly id: string
  /** The caller, once authenticated. */
  userId: string | undefined
  /** The declared route it was routed to (`/v1/workflow/:id`), once routed; `other` when none. */
  route: string | undefined
  /** Logs and counts the answer; called once, when its head is written. */
  readonly answered: (status: number) => void
}

/**
 * The request log as `AccessLog.ts` calls it: `begin` when a request arrives, before its
 * handler runs (the record is then found from the request: `requestRecord`).
 */
export type RequestLog = (req: IncomingMessage, res: ServerResponse) => RequestRecord

/**
 * Logs every response, errors and refusals (429) included, once its head is written, with its
 * request id: the client's `X-Request-Id` when it sent a sane one, else a new UUID; returned in the
 * `X-Request-Id` response header and carried by every log line of the request (jsonLogger reads it
 * from the request). Counts it in the HTTP metrics.
 *
 * This runs on every request, so it is plain code on node's request and response
 * (`AccessLog.ts`), not a middleware effect: the line goes straight to the loggers installed where the server was built (the same
 * loggers and format as every other line), and each route and status's metric labels are made
 * once. Measured in docs/decisions.md ("Request log").
 */
export const requestLog: Effect.Effect<RequestLog> = Effect.withFiber((fiber) =>
  Effect.map(infoLines, (info) => {
    // A metric's labels come from the context it is updated with: one context per route and status.
    const base = fiber.getRef(Metric.CurrentMetricAttributes)
    const withLabels = (labels: Metric.Metric.AttributeSet) =>
      Context.add(fiber.context, Metric.CurrentMetricAttributes, { ...base, ...labels })
    const labels = new Map<string, { readonly counted: Context.Context<never>; readonly timed: Context.Context<never> }>()
    const labelsOf = (route: string, status: number) => {
      const key = `${status} ${route}`
      let found = labels.get(key)
      if (found === undefined) {
        found = { counted: withLabels({ route, status: String(status) }), timed: withLabels({ route }) }
        labels.set(key, found)
      }
      return found
    }
    return (req: IncomingMessage, res: ServerResponse): RequestRecord => {
      const start = Date.now()
      const sent = req.headers["x-request-id"]
      const id = typeof sent === "string" && REQUEST_ID.test(sent) ? sent : randomUUID()
      // On the node response itself, so every answer (errors too) carries it.
      res.setHeader("x-request-id", id)
      const record: RequestRecord = {
        id,
        userId: undefined,
        route: undefined,
        answered: (status) => {
          const url = req.url ?? "/"
          const duration = Date.now() - start
          const { counted, timed } = labelsOf(record.route ?? "other", status)
          httpRequests.updateUnsafe(1, counted)
          httpDuration.updateUnsafe(duration / 1000, timed)
          info("request", {
            method: req.method,
            path: pathOf(url),
            status,
            duration_ms: duration,
            ...(record.userId === undefined ? {} : { user_id: record.userId })
          }, id)
        }
      }
      records.set(req, record)
      return record
    }
  }))
