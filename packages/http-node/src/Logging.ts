/**
 * Structured logs: one JSON object per line. Requests are logged once each with method, path
 * (never the query string), status, duration, request id and (once authenticated) user id;
 * headers, and so tokens, are never logged.
 */
import * as HttpServerRequest from "effect/unstable/http/HttpServerRequest"
import { httpDuration, httpRequests } from "@wes/core"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as FiberRefs from "effect/FiberRefs"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as List from "effect/List"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import { randomUUID } from "node:crypto"
import type { IncomingMessage, ServerResponse } from "node:http"
import { NodeRequest } from "./NodeRequest.js"

/** Where log lines go (stdout by default; tests capture them). */
export type LogSink = (line: string) => void

const stdout: LogSink = (line) => void process.stdout.write(line + "\n")

/** A logger that writes flat JSON lines: time, level, msg, then every field and annotation. */
export const jsonLogger = (sink: LogSink = stdout) =>
  Logger.make(({ annotations, cause, context, date, logLevel, message }) => {
    const parts = Array.isArray(message) ? message : [message]
    const line: Record<string, unknown> = { time: date.toISOString(), level: logLevel.label.toLowerCase() }
    const text: Array<string> = []
    for (const part of parts) {
      if (typeof part === "object" && part !== null && !Array.isArray(part)) Object.assign(line, part)
      else text.push(String(part))
    }
    line["msg"] = text.join(" ")
    HashMap.forEach(annotations, (value, key) => void (line[key] = value))
    // A line written while a request runs names the request.
    if (line["request_id"] === undefined) {
      const request = Context.getOption(FiberRefs.getOrDefault(context, FiberRef.currentContext), HttpServerRequest.HttpServerRequest)
      if (Option.isSome(request) && request.value instanceof NodeRequest && request.value.record !== undefined) line["request_id"] = request.value.record.id
    }
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
 * Writes info lines from node's callbacks: synchronously, to the loggers (and at the minimum
 * level) installed where this runs, with the annotations there and a request id. No fiber per
 * line: the request log runs on every request.
 */
export const infoLines: Effect.Effect<(message: string, fields: Record<string, unknown>, requestId: string) => void> =
  Effect.withFiberRuntime((fiber) => {
    const loggers = fiber.getFiberRef(FiberRef.currentLoggers)
    const logged = LogLevel.greaterThanEqual(LogLevel.Info, fiber.getFiberRef(FiberRef.currentMinimumLogLevel))
    const annotations = fiber.getFiberRef(FiberRef.currentLogAnnotations)
    const context = fiber.getFiberRefs()
    const fiberId = fiber.id()
    return Effect.succeed((message, fields, requestId) => {
      if (!logged) return
      const options = {
        fiberId,
        logLevel: LogLevel.Info,
        message: [message, fields],
        cause: Cause.empty,
        context,
        spans: List.empty(),
        annotations: HashMap.set(annotations, "request_id", requestId),
        date: new Date()
      }
      for (const logger of loggers) logger.log(options)
    })
  })

/** An `X-Request-Id` a client (or a proxy) sent, if it is a sane one. */
const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/

/** What the request log knows of one request, shared by every view of it (NodeRequest.modify). */
export interface RequestRecord {
  readonly id: string
  /** The caller, once authenticated. */
  userId: string | undefined
  /** The declared route it was routed to (`/v1/workflow/:id`), once routed; `other` when none. */
  route: string | undefined
  /** Logs and counts the answer; called once, when its head is written. */
  readonly answered: (status: number) => void
}

/** The request log as the server adapter calls it: `begin` when a request arrives. */
export type RequestLog = (req: IncomingMessage, res: ServerResponse) => RequestRecord

/**
 * Logs every response, errors and refusals (429) included, once its head is written, with its
 * request id: the client's `X-Request-Id` when it sent a sane one, else a new UUID; returned in the
 * `X-Request-Id` response header and carried by every log line of the request (jsonLogger reads it
 * from the request). Counts it in the HTTP metrics.
 *
 * This runs on every request, so it is plain code on the adapter's events, not a middleware
 * effect: the line goes straight to the loggers installed where the server was built (the same
 * loggers and format as every other line), and each route and status's metric labels are made
 * once. Measured in docs/decisions.md ("Request log").
 */
export const requestLog: Effect.Effect<RequestLog> = Effect.map(infoLines, (info) => {
  const labels = new Map<string, { readonly counted: ReadonlyArray<MetricLabel.MetricLabel>; readonly timed: ReadonlyArray<MetricLabel.MetricLabel> }>()
  const labelsOf = (route: string, status: number) => {
    const key = `${status} ${route}`
    let found = labels.get(key)
    if (found === undefined) {
      const label = MetricLabel.make("route", route)
      found = { counted: [label, MetricLabel.make("status", String(status))], timed: [label] }
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
        httpRequests.unsafeUpdate(1, counted)
        httpDuration.unsafeUpdate(duration / 1000, timed)
        info("request", {
          method: req.method,
          path: pathOf(url),
          status,
          duration_ms: duration,
          ...(record.userId === undefined ? {} : { user_id: record.userId })
        }, id)
      }
    }
    return record
  }
})
