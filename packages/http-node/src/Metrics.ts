/**
 * `GET /metrics`: the process's effect `Metric`s (core's observability/Metrics.ts and the HTTP
 * edge's) in the Prometheus text exposition format (version 0.0.4), written by effect's own
 * PrometheusMetrics. With `WES_METRICS_TOKEN` set, the scrape must carry
 * `Authorization: Bearer <token>`. The `wes_workflows` gauge is read from the store first, at most
 * once per `STATUS_TTL` however many scrapers ask; the process's memory and CPU
 * (ProcessMetrics.ts) at every scrape.
 */
import { bearerToken, observeWorkflowStatuses, WorkflowRepository } from "@wes/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { HttpServerRequest } from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as PrometheusMetrics from "effect/observability/PrometheusMetrics"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { timingSafeEqual } from "node:crypto"
import type { PlainRoute } from "./Edge.js"
import { sampleProcessMetrics } from "./ProcessMetrics.js"

const sameSecret = (a: string, b: string) => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** How long one read of the workflows by status serves scrapes (docs/decisions.md). */
export const STATUS_TTL = Duration.seconds(5)

const refused = HttpServerResponse.jsonUnsafe({ status: 401, message: "Invalid token" }, { status: 401 })

/** The `GET /metrics` route (outside the API declaration: it is not JSON and not part of the contract). */
export const metricsRoute = (token: Option.Option<Redacted.Redacted<string>>) =>
  Effect.gen(function*() {
    // A failed read keeps the last figures: the store error is counted (wes_store_errors_total)
    // and logged, and the rest of the scrape still answers (it matters most during an outage).
    const statuses = yield* Effect.cachedWithTTL(
      observeWorkflowStatuses.pipe(
        Effect.catch((e) => Effect.logWarning("metrics: could not count workflows by status", { error: e.message })),
        Effect.provideService(WorkflowRepository, yield* WorkflowRepository)
      ),
      STATUS_TTL
    )
    const handler = Effect.gen(function*() {
      if (Option.isSome(token)) {
        const request = yield* HttpServerRequest
        const sent = bearerToken(request.headers.authorization ?? "")
        if (sent === undefined || !sameSecret(sent, Redacted.value(token.value))) return refused
      }
      yield* statuses
      yield* sampleProcessMetrics
      return HttpServerResponse.text(yield* PrometheusMetrics.format(), { contentType: "text/plain; version=0.0.4; charset=utf-8" })
    })
    return { path: "/metrics", handler } satisfies PlainRoute
  })
