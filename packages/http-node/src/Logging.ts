/**
 * Structured logs: one JSON object per line. Requests are logged once each with method, path
 * (never the query string), status, duration, request id and (once authenticated) user id;
 * headers, and so tokens, are never logged.
 */
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HashMap from "effect/HashMap"
import * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import { randomUUID } from "node:crypto"
import { httpDuration, httpRequests } from "@wes/core"
import * as MetricLabel from "effect/MetricLabel"
import { NodeRequest } from "./NodeRequest.js"
import { routeOf } from "./Routes.js"

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

/** What the request log learns while a request runs: who the caller is, once authenticated. */
export class RequestLogContext extends Context.Tag("@wes/http-node/RequestLogContext")<RequestLogContext, {
  userId: string | undefined
}>() {}

/** An `X-Request-Id` a client (or a proxy) sent, if it is a sane one. */
const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/

/**
 * Logs every response, errors and refusals (429) included, once it is produced, with its request
 * id: the client's `X-Request-Id` when it sent a sane one, else a new UUID; returned in the
 * `X-Request-Id` response header and carried by every log line of the request. The clock is read
 * directly (not through an effect per reading): this runs on every request.
 */
export const requestLog = HttpMiddleware.make((app) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
    Effect.clockWith((clock) => {
      const start = clock.unsafeCurrentTimeMillis()
      const sent = request.headers["x-request-id"]
      const requestId = sent !== undefined && REQUEST_ID.test(sent) ? sent : randomUUID()
      // On the node response itself, so error answers (written from the cause) carry it too.
      if (request instanceof NodeRequest && !request.response.headersSent) request.response.setHeader("x-request-id", requestId)
      const context = { userId: undefined as string | undefined }
      return Effect.onExit(app.pipe(Effect.provideService(RequestLogContext, context)), (exit) => {
        // The client left before an answer: nothing was answered, nothing to log.
        if (Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)) return Effect.void
        const status = Exit.isSuccess(exit) ? exit.value.status : HttpServerError.causeResponseStripped(exit.cause)[0].status
        const duration = clock.unsafeCurrentTimeMillis() - start
        const route = MetricLabel.make("route", routeOf(request.url))
        httpRequests.unsafeUpdate(1, [route, MetricLabel.make("status", String(status))])
        httpDuration.unsafeUpdate(duration / 1000, [route])
        return Effect.logInfo("request", {
          method: request.method,
          path: pathOf(request.url),
          status,
          duration_ms: duration,
          ...(context.userId === undefined ? {} : { user_id: context.userId })
        })
      }).pipe(Effect.annotateLogs("request_id", requestId))
    })))
