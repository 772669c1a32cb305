/**
 * Structured logs: one JSON object per line. Requests are logged once each with method, path
 * (never the query string), status and duration; headers, and so tokens, are never logged.
 */
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
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

/**
 * Logs every response, errors included, once it is produced. The clock is read directly (not
 * through an effect per reading): this runs on every request.
 */
export const requestLog = HttpMiddleware.make((app) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    Effect.clockWith((clock) => {
      const start = clock.unsafeCurrentTimeMillis()
      return Effect.onExit(app, (exit) =>
        Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)
          // The client left before an answer: nothing was answered, nothing to log.
          ? Effect.void
          : Effect.logInfo("request", {
            method: request.method,
            path: pathOf(request.url),
            status: Exit.isSuccess(exit) ? exit.value.status : HttpServerError.causeResponseStripped(exit.cause)[0].status,
            duration_ms: clock.unsafeCurrentTimeMillis() - start
          }))
    })))
