/**
 * `GET /metrics`: the process's effect `Metric`s (core's observability/Metrics.ts and the HTTP
 * edge's) in the Prometheus text exposition format (version 0.0.4). With `WES_METRICS_TOKEN` set,
 * the scrape must carry `Authorization: Bearer <token>`. The `wes_workflows` gauge is read from
 * the store first, at most once per `STATUS_TTL` however many scrapers ask; the process's memory
 * and CPU (ProcessMetrics.ts) at every scrape.
 */
import * as HttpServerRequest from "effect/unstable/http/HttpServerRequest"
import * as HttpServerResponse from "effect/unstable/http/HttpServerResponse"
import { bearerToken, observeWorkflowStatuses } from "@wes/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type * as MetricPair from "effect/MetricPair"
import * as MetricState from "effect/MetricState"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { timingSafeEqual } from "node:crypto"
import type { PlainRoute } from "./edge/ApiApp.js"
import { sampleProcessMetrics } from "./ProcessMetrics.js"

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")
const labels = (pairs: ReadonlyArray<readonly [string, string]>) =>
  pairs.length === 0 ? "" : `{${pairs.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(",")}}`
const num = (n: number) => (n === Infinity ? "+Inf" : n === -Infinity ? "-Inf" : Number.isNaN(n) ? "NaN" : String(n))

/** The snapshot as Prometheus text: one HELP and TYPE per metric name, then its series. */
export const renderPrometheus = (pairs: ReadonlyArray<MetricPair.MetricPair.Untyped>): string => {
  const byName = new Map<string, Array<MetricPair.MetricPair.Untyped>>()
  for (const pair of pairs) {
    const list = byName.get(pair.metricKey.name) ?? []
    list.push(pair)
    byName.set(pair.metricKey.name, list)
  }
  const out: Array<string> = []
  for (const [name, series] of [...byName].sort(([a], [b]) => a.localeCompare(b))) {
    const first = series[0]!
    const state: unknown = first.metricState
    const type = MetricState.isCounterState(state) ? "counter" : MetricState.isGaugeState(state) ? "gauge" : MetricState.isHistogramState(state) ? "histogram" : undefined
    if (type === undefined) continue
    out.push(`# HELP ${name} ${Option.getOrElse(first.metricKey.description, () => name).replace(/\n/g, " ")}`)
    out.push(`# TYPE ${name} ${type}`)
    for (const pair of series) {
      const tags = pair.metricKey.tags.map((t) => [t.key, t.value] as const)
      const s: unknown = pair.metricState
      if (MetricState.isCounterState(s) || MetricState.isGaugeState(s)) {
        out.push(`${name}${labels(tags)} ${num(Number((s as { count?: number | bigint; value?: number | bigint }).count ?? (s as { value: number | bigint }).value))}`)
      } else if (MetricState.isHistogramState(s)) {
        let sawInf = false
        for (const [bound, count] of s.buckets) {
          sawInf ||= bound === Infinity
          out.push(`${name}_bucket${labels([...tags, ["le", num(bound)]])} ${count}`)
        }
        if (!sawInf) out.push(`${name}_bucket${labels([...tags, ["le", "+Inf"]])} ${s.count}`)
        out.push(`${name}_sum${labels(tags)} ${num(s.sum)}`)
        out.push(`${name}_count${labels(tags)} ${s.count}`)
      }
    }
  }
  return out.join("\n") + "\n"
}

const sameSecret = (a: string, b: string) => {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}

/** How long one read of the workflows by status serves scrapes (docs/decisions.md). */
export const STATUS_TTL = Duration.seconds(5)

/** The `GET /metrics` route (outside the API declaration: it is not JSON and not part of the contract). */
export const metricsRoute = (token: Option.Option<Redacted.Redacted<string>>) =>
  Effect.gen(function*() {
    // A failed read keeps the last figures: the store error is counted (wes_store_errors_total)
    // and logged, and the rest of the scrape still answers (it matters most during an outage).
    const statuses = yield* Effect.cachedWithTTL(
      observeWorkflowStatuses.pipe(Effect.catch((e) => Effect.logWarning("metrics: could not count workflows by status", { error: e.message }))),
      STATUS_TTL
    )
    const handler = Effect.gen(function*() {
      if (Option.isSome(token)) {
        const request = yield* HttpServerRequest.HttpServerRequest
        const sent = bearerToken(request.headers.authorization ?? "")
        if (sent === undefined || !sameSecret(sent, Redacted.value(token.value))) {
          return HttpServerResponse.unsafeJson({ status: 401, message: "Invalid token" }, { status: 401 })
        }
      }
      yield* statuses
      yield* sampleProcessMetrics
      const pairs = yield* Metric.snapshot
      return HttpServerResponse.text(renderPrometheus(pairs), { contentType: "text/plain; version=0.0.4; charset=utf-8" })
    })
    return { path: "/metrics", handler } satisfies PlainRoute
  })
