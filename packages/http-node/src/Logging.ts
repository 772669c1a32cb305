/**
 * Structured logs: one JSON object per line. Requests are logged once each with method, path
 * (never the query string), status and duration; headers, and so tokens, are never logged.
 */
import * as HttpApp from "@effect/platform/HttpApp"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"

/** Where log lines go (stdout by default; tests capture them). */
export type LogSink = (line: string) => void

const stdout: LogSink = (line) => void process.stdout.write(line + "\n")

/** A logger that writes flat JSON lines: time, level, msg, then every field and annotation. */
export const jsonLogger = (sink: LogSink = stdout) =>
  Logger.make(({ annotations, cause, date, logLevel, message }) => {
    const parts = Array.isArray(message) ? message : [message]
    const line: Record<string, unknown> = { time: date.toISOString(), level: logLevel.label.toLowerCase() }
    const text: Array<string> = []
    for (const part of parts) {
      if (typeof part === "object" && part !== null && !Array.isArray(part)) Object.assign(line, part)
      else text.push(String(part))
    }
    line["msg"] = text.join(" ")
    for (const [key, value] of HashMap.toEntries(annotations)) line[key] = value
    if (!Cause.isEmpty(cause)) line["error"] = Cause.pretty(cause)
    sink(JSON.stringify(line))
  })

/** Replaces the default logger with JSON lines. */
export const jsonLoggerLayer = (sink?: LogSink): Layer.Layer<never> => Logger.replace(Logger.defaultLogger, jsonLogger(sink))

const pathOf = (url: string): string => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

/** Logs every response, errors included, after it is produced. */
export const requestLog = HttpMiddleware.make((app) =>
  Effect.gen(function*() {
    const start = yield* Clock.currentTimeMillis
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* HttpApp.appendPreResponseHandler((_req, response) =>
      Effect.flatMap(Clock.currentTimeMillis, (end) =>
        Effect.as(
          Effect.logInfo("request", {
            method: request.method,
            path: pathOf(request.url),
            status: response.status,
            duration_ms: end - start
          }),
          response
        ))
    )
    return yield* app
  })
)
