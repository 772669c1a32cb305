/**
 * The service's metrics, as effect `Metric`s (the process's registry): the HTTP edge renders them
 * in the Prometheus text format at `GET /metrics`. Labels are bounded: outcomes, runner kinds,
 * declared routes and status codes, never ids.
 */
import type * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import { activeStatuses, type WorkflowHead } from "../domain/Workflow.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"

/** Seconds, from 50 ms to about 14 hours. */
const durations = Metric.exponentialBoundaries({ start: 0.05, factor: 2.5, count: 14 })

export const workflowsCreated = Metric.counter("wes_workflows_created_total", {
  description: "Workflows created (create and rerun)",
  incremental: true
})
const workflowsFinishedOptions = {
  description: "Workflows that reached an end, by outcome and runner kind",
  incremental: true
} as const
export const workflowsFinished = Metric.counter("wes_workflows_finished_total", workflowsFinishedOptions)
export const queueWait = Metric.histogram("wes_workflow_queue_seconds", {
  description: "From creation to the start of execution",
  boundaries: durations
})
export const runTime = Metric.histogram("wes_workflow_run_seconds", { description: "From the start of execution to the end", boundaries: durations })
export const httpRequests = Metric.counter("wes_http_requests_total", { description: "HTTP answers by route and status", incremental: true })
export const httpDuration = Metric.histogram("wes_http_request_duration_seconds", {
  description: "Time to answer an HTTP request, by route",
  boundaries: Metric.exponentialBoundaries({ start: 0.001, factor: 2.5, count: 12 })
})
export const sseSubscribers = Metric.gauge("wes_sse_subscribers", { description: "Open event streams (GET /v1/workflow/:id/subscribe)" })

/**
 * Unfinished workflows of the whole service by status, read from the store when scraped (so
 * every instance reports the same, service-wide figures). Finished ones are counted by
 * `wes_workflows_finished_total`: counting them would read a table that only grows.
 */
export const workflowsByStatus = Metric.gauge("wes_workflows", {
  description: "Unfinished workflows of the whole service, by status (read from the store when scraped)"
})

/** Sets `wes_workflows` from the store: every unfinished status, zero when none. */
export const observeWorkflowStatuses = Effect.flatMap(WorkflowRepository, (repo) =>
  Effect.flatMap(repo.countUnfinishedByStatus, (counts) =>
    Effect.forEach(activeStatuses, (status) => Metric.update(Metric.withAttributes(workflowsByStatus, { status }), counts.get(status) ?? 0), {
      discard: true
    })))

/**
 * Prompts this instance keeps on each runner it drives (being submitted, queued or running
 * there), by runner id and kind. One driver per runner in the service, so summing over instances
 * counts each prompt once. Labelled by runner id: runners are bounded per user by tier; a runner
 * no longer driven here reads 0.
 */
export const runnerInFlight = Metric.gauge("wes_runner_in_flight", {
  description: "Prompts this instance has on each runner it drives (submitting, queued or running), by runner"
})

const seconds = (from: DateTime.Utc, to: DateTime.Utc) => Math.max(0, DateTime.toEpochMillis(to) - DateTime.toEpochMillis(from)) / 1000

/**
 * `wes_workflows_finished_total` of an outcome and a runner kind, one metric per pair for the
 * process's life: a metric caches its series key, so updates do not rebuild it (`withAttributes`
 * merges the attributes into the context on every update). At most statuses x 3 metrics.
 */
const finishedSeries = new Map<string, Metric.Counter<number>>()
const finished = (outcome: string, runnerKind: string): Metric.Counter<number> => {
  const key = `${outcome}\u0000${runnerKind}`
  let series = finishedSeries.get(key)
  if (series === undefined) {
    series = Metric.counter("wes_workflows_finished_total", { ...workflowsFinishedOptions, attributes: { outcome, runner_kind: runnerKind } })
    finishedSeries.set(key, series)
  }
  return series
}

const record = (
  w: Pick<WorkflowHead, "status" | "created_at" | "started_at" | "completed_at" | "managed_runner_id" | "user_runner_id">,
  context: Context.Context<never>
) => {
  const runner = w.managed_runner_id !== null ? "managed" : w.user_runner_id !== null ? "user" : "none"
  finished(w.status, runner).updateUnsafe(1, context)
  if (w.started_at !== null) {
    queueWait.updateUnsafe(seconds(w.created_at, w.started_at), context)
    if (w.completed_at !== null) runTime.updateUnsafe(seconds(w.started_at, w.completed_at), context)
  }
}

/**
 * Records a workflow that has just ended: its outcome, runner kind, queue wait and run time. In
 * one synchronous step, in the fiber's metric registry.
 */
export const recordFinished = (w: Pick<WorkflowHead, "status" | "created_at" | "started_at" | "completed_at" | "managed_runner_id" | "user_runner_id">) =>
  Effect.contextWith((context: Context.Context<never>) => Effect.sync(() => record(w, context)))

export const dispatchAttempts = Metric.counter("wes_dispatch_attempts_total", {
  description: "Prompts posted to runners, by result (submitted, rejected, error, withheld) and the runner's ComfyUI version",
  incremental: true
})
export const outputTransfer = Metric.histogram("wes_output_transfer_seconds", {
  description: "Time to copy one output file from a runner",
  boundaries: durations
})
export const runnersConnected = Metric.gauge("wes_runners_connected", { description: "Runner WebSockets connected, by runner kind" })
export const storeErrors = Metric.counter("wes_store_errors_total", { description: "Store operations that failed, by operation", incremental: true })

/** Webhooks (issue 16). */
export const webhookDeliveries = Metric.counter("wes_webhook_deliveries_total", {
  description: "Webhook deliveries that ended, by outcome (delivered, failed)",
  incremental: true
})
export const webhookAttempts = Metric.counter("wes_webhook_attempts_total", {
  description: "Webhook sends, by result (2xx, 4xx, 5xx, no_answer, refused)",
  incremental: true
})
export const webhookAttemptDuration = Metric.histogram("wes_webhook_attempt_seconds", {
  description: "Time of one webhook send, to the receiver's answer (or its absence)",
  boundaries: Metric.exponentialBoundaries({ start: 0.005, factor: 2.5, count: 10 })
})
export const webhookDeliveryLatency = Metric.histogram("wes_webhook_delivery_seconds", {
  description: "From the status change to its delivery (retries included)",
  boundaries: durations
})
