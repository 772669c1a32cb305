/**
 * The retention sweeper (issue 33): at each tick it deletes, batch by batch until none is due, the
 * blobs (`inputs/<id>/`, `outputs/<id>/`) of finished workflows past their owner's tier's
 * `retention_days` and marks their outputs expired (the rows stay); then it prunes the events of
 * workflows that ended before `eventsAfter` and webhook deliveries whose outcome is older than
 * `deliveriesAfter`. It talks to the store through its ports only, so it runs on every store;
 * batches are claimed with a lease, so several instances on one database share them and a
 * workflow's bytes are counted by the instance that deleted them.
 */
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Schedule from "effect/Schedule"
import { expiryOf, retentionCutoffs } from "../domain/Retention.js"
import { TierPolicy } from "../domain/Tier.js"
import { BlobStore } from "../ports/BlobStore.js"
import { type DueWorkflow, RetentionRepository } from "../ports/RetentionRepository.js"
import * as M from "./RetentionMetrics.js"

export interface RetentionOptions {
  /** This instance's name in claims. */
  readonly owner: string
  /** The blob store's kind (memory, pg, fs, s3): the metrics' `store` label. */
  readonly store: string
  /** Time between sweeps. */
  readonly interval: Duration.Input
  /** Workflows (or deliveries) per batch. */
  readonly batch: number
  /** How long a claimed batch is this instance's: longer than deleting its blobs takes. */
  readonly lease: Duration.Input
  /** Events of a finished workflow are kept this long after it ended. */
  readonly eventsAfter: Duration.Input
  /** A webhook delivery is kept this long after its outcome. */
  readonly deliveriesAfter: Duration.Input
}

export const defaultRetentionOptions = (owner: string, store: string): RetentionOptions => ({
  owner,
  store,
  interval: Duration.minutes(5),
  batch: 100,
  lease: Duration.minutes(10),
  eventsAfter: Duration.days(7),
  deliveriesAfter: Duration.days(30)
})

/** What one sweep did. */
export interface SweepReport {
  readonly workflows: number
  readonly blobs: number
  readonly bytes: number
  readonly events: number
  readonly deliveries: number
}

/** Runs `batch` until it handles fewer than `size`; the sum of what it handled. */
const untilShort = <E, R>(size: number, batch: Effect.Effect<number, E, R>): Effect.Effect<number, E, R> => {
  const loop = (total: number): Effect.Effect<number, E, R> =>
    Effect.flatMap(batch, (n) => (n < size ? Effect.succeed(total + n) : loop(total + n)))
  return loop(0)
}

/** Deletes one workflow's blobs; none deleted (logged) when the store fails: its claim lapses and a later sweep retries. */
const deleteBlobs = (w: DueWorkflow) =>
  Effect.flatMap(BlobStore, (blobs) =>
    Effect.zipWith(blobs.deletePrefix(`inputs/${w.id}/`), blobs.deletePrefix(`outputs/${w.id}/`), (a, b) => ({
      workflow: w,
      blobs: a.blobs + b.blobs,
      bytes: a.bytes + b.bytes
    })).pipe(
      Effect.catch((e) => Effect.as(Effect.logWarning("retention: could not delete a workflow's files", { workflow_id: w.id, error: e.message }), undefined))
    ))

/** One sweep: every due workflow's blobs, then events, then deliveries. */
export const sweepOnce = (options: RetentionOptions) =>
  Effect.gen(function*() {
    const repo = yield* RetentionRepository
    const { table } = yield* TierPolicy
    const store = { store: options.store }
    let blobs = 0
    let bytes = 0
    let workflows = 0
    let events = 0
    yield* untilShort(options.batch, Effect.gen(function*() {
      const now = yield* DateTime.now
      const due = yield* repo.claimDue(retentionCutoffs(table, now), options.owner, now, DateTime.addDuration(now, options.lease), options.batch)
      const deleted = (yield* Effect.forEach(due, deleteBlobs, { concurrency: 4 })).filter((d) => d !== undefined)
      const marked = yield* repo.markExpired(deleted.map((d) => ({
        id: d.workflow.id,
        expired_at: expiryOf(d.workflow.completed_at, table[d.workflow.tier].retention_days)
      })))
      const batchBlobs = deleted.reduce((n, d) => n + d.blobs, 0)
      const batchBytes = deleted.reduce((n, d) => n + d.bytes, 0)
      blobs += batchBlobs
      bytes += batchBytes
      yield* Metric.update(Metric.withAttributes(M.retentionDeletedBlobs, store), batchBlobs)
      yield* Metric.update(Metric.withAttributes(M.retentionDeletedBytes, store), batchBytes)
      yield* Metric.update(M.retentionExpiredWorkflows, marked.workflows)
      workflows += marked.workflows
      return due.length
    }))
    const now = yield* DateTime.now
    yield* untilShort(options.batch, Effect.map(repo.pruneEvents(DateTime.subtractDuration(now, options.eventsAfter), options.batch), (r) => {
      events += r.events
      return r.workflows
    }))
    yield* Metric.update(M.prunedEvents, events)
    const deliveries = yield* untilShort(options.batch, repo.pruneDeliveries(DateTime.subtractDuration(now, options.deliveriesAfter), options.batch))
    yield* Metric.update(M.prunedDeliveries, deliveries)
    yield* Metric.update(Metric.withAttributes(M.blobStoredBytes, store), yield* repo.storedBytes)
    return { workflows, blobs, bytes, events, deliveries } satisfies SweepReport
  })

/** Sweeps now and then every `interval` until interrupted; a failed sweep is logged and the next tick tries again. */
export const runRetention = (options: RetentionOptions) =>
  sweepOnce(options).pipe(
    Effect.tap((r) => r.workflows + r.events + r.deliveries > 0 ? Effect.logInfo("retention sweep", r) : Effect.void),
    Effect.catch((e) => Effect.logWarning("retention sweep failed; retrying at the next tick", { error: e.message })),
    Effect.repeat(Schedule.spaced(options.interval))
  )
