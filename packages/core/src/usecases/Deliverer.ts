/**
 * The delivery pool: claims due deliveries (a lease each), sends each in its own fiber (at most
 * `concurrency` at once, in a FiberSet), records the attempt and its outcome, and claims again
 * when a slot frees, the store says new ones were recorded, or the poll interval passes. A delivery whose claim expired (its instance
 * died mid-send) is claimed again: it may repeat, never vanish.
 */
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import { webhookAttempts, webhookDeliveries, webhookDeliveryLatency, webhookAttemptDuration } from "./Metrics.js"
import { type RetryOptions, outcomeOf, type SendResult } from "../domain/DeliveryPolicy.js"
import { signingSecrets, type WebhookDelivery } from "../domain/Webhook.js"
import { WebhookRepository } from "../ports/WebhookRepository.js"
import { WebhookSender } from "../ports/WebhookSender.js"

export interface DelivererOptions {
  /** This instance's name in claims. */
  readonly owner: string
  /** Deliveries sent at once. */
  readonly concurrency: number
  /** How often to look for due deliveries when idle. */
  readonly pollInterval: Duration.Input
  /** How long a claim lasts: longer than a send (with its timeout) and its record. */
  readonly lease: Duration.Input
  readonly retry: RetryOptions
}

const resultLabel = (r: SendResult) => (r._tag === "Answered" ? `${Math.floor(r.status / 100)}xx` : r._tag === "NoAnswer" ? "no_answer" : "refused")

const errorOf = (r: SendResult): string | null =>
  r._tag === "Answered" ? (r.status >= 200 && r.status < 300 ? null : `HTTP ${r.status}${r.body === "" ? "" : `: ${r.body}`}`) : r.error

/** One attempt at one claimed delivery, recorded with its outcome. */
export const deliverOne = (d: WebhookDelivery, options: DelivererOptions) =>
  Effect.gen(function*() {
    const repo = yield* WebhookRepository
    const sender = yield* WebhookSender
    const start = yield* DateTime.now
    const endpoint = yield* repo.findEndpoint(d.user_id)
    const result: SendResult = Option.isNone(endpoint)
      ? { _tag: "Refused", error: "the owner has no webhook signing secret (PUT /v1/webhook)" }
      : yield* sender.send({ id: d.id, url: d.url, payload: d.payload, timestamp: start, secrets: signingSecrets(endpoint.value, start) })
    const end = yield* DateTime.now
    const outcome = yield* outcomeOf(result, d.attempts.length + 1, end, d.expires_at, options.retry)
    const duration_ms = DateTime.toEpochMillis(end) - DateTime.toEpochMillis(start)
    const recorded = yield* repo.complete(d.id, options.owner, {
      at: start,
      status_code: result._tag === "Answered" ? result.status : null,
      error: errorOf(result),
      duration_ms,
      next_attempt_at: outcome._tag === "RetryAt" ? outcome.at : null
    }, outcome)
    yield* Metric.update(Metric.withAttributes(webhookAttempts, { result: resultLabel(result) }), 1)
    yield* Metric.update(webhookAttemptDuration, duration_ms / 1000)
    if (recorded && outcome._tag !== "RetryAt") {
      yield* Metric.update(Metric.withAttributes(webhookDeliveries, { outcome: outcome._tag === "Delivered" ? "delivered" : "failed" }), 1)
    }
    if (recorded && outcome._tag === "Delivered") {
      yield* Metric.update(webhookDeliveryLatency, Math.max(0, DateTime.toEpochMillis(end) - DateTime.toEpochMillis(d.created_at)) / 1000)
    }
  })

/** 250 ms doubling, at most 5 s apart: the shorter delay of the two, for as long as either recurs. */
const claimBackoff = Schedule.min([Schedule.exponential(Duration.millis(250)), Schedule.spaced(Duration.seconds(5))])

/** Runs the pool until interrupted; claims that fail are retried with a backoff (`claimBackoff`). */
export const runDeliverer = (options: DelivererOptions) =>
  Effect.gen(function*() {
    const repo = yield* WebhookRepository
    const fibers = yield* FiberSet.make<void, never>()
    // A slot freed: claim again without waiting for the poll (bounded: one pending signal is enough).
    const freed = yield* Queue.sliding<void>(1)
    // While the store fails (an outage), claims back off (250 ms doubling up to 5 s), logged once.
    const failing = yield* Ref.make(false)
    const claim = (free: number) =>
      Effect.flatMap(DateTime.now, (now) => repo.claim(options.owner, now, DateTime.addDuration(now, options.lease), free)).pipe(
        Effect.tapError((e) =>
          Effect.flatMap(Ref.getAndSet(failing, true), (was) =>
            was ? Effect.void : Effect.logWarning("webhook claims failing; retrying", { error: e.message }))
        ),
        Effect.retry(claimBackoff),
        Effect.tap(() => Effect.flatMap(Ref.getAndSet(failing, false), (was) => (was ? Effect.logInfo("webhook claims work again") : Effect.void)))
      )
    const claimMore = Effect.gen(function*() {
      const free = options.concurrency - (yield* FiberSet.size(fibers))
      if (free <= 0) return 0
      const batch = yield* claim(free)
      for (const d of batch) {
        yield* FiberSet.run(fibers, deliverOne(d, options).pipe(
          Effect.catchCause((cause) => Effect.logWarning("webhook delivery not recorded", { delivery_id: d.id, cause })),
          Effect.ensuring(Queue.offer(freed, undefined))
        ))
      }
      return batch.length
    })
    return yield* Effect.forever(Effect.gen(function*() {
      const claimed = yield* claimMore
      if (claimed > 0) return
      yield* Effect.raceAll([Effect.sleep(options.pollInterval), Queue.take(freed), repo.recorded])
    }))
  }).pipe(Effect.scoped)

export const defaultDelivererOptions = (owner: string): Omit<DelivererOptions, "retry"> => ({
  owner,
  concurrency: 16,
  pollInterval: Duration.millis(250),
  lease: Duration.seconds(30)
})
