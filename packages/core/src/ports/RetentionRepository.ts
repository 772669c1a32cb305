/**
 * What the retention sweeper asks of the store: finished workflows whose files are due (by their
 * owner's tier), claimed in bounded batches with a lease so several instances on one database
 * share them; marking their outputs expired once their blobs are gone; pruning the event logs of
 * long-finished workflows and webhook deliveries long after their outcome; and the bytes of
 * outputs still kept (a gauge).
 */
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import type * as Effect from "effect/Effect"
import type { StorageError } from "../domain/Errors.js"
import type { RetentionCutoffs } from "../domain/Retention.js"
import type { Tier } from "../domain/Tier.js"

/** A finished workflow whose files are due for deletion. */
export interface DueWorkflow {
  readonly id: string
  /** Its owner's tier now (a user the store does not know counts as `free`). */
  readonly tier: Tier
  /** When it ended. */
  readonly completed_at: DateTime.Utc
}

/** What one `markExpired` changed: the workflows it marked (not marked before) and their outputs' bytes. */
export interface MarkedExpired {
  readonly workflows: number
  readonly outputs: number
  readonly output_bytes: number
}

export class RetentionRepository extends Context.Service<RetentionRepository, {
  /**
   * Claims up to `limit` finished workflows, oldest end first, not marked expired, whose end is
   * at or before their owner's tier's cutoff and whose claim is free or expired at `now`, for
   * `owner` until `leaseUntil`: another claim before then skips them.
   */
  readonly claimDue: (
    cutoffs: RetentionCutoffs,
    owner: string,
    now: DateTime.Utc,
    leaseUntil: DateTime.Utc,
    limit: number
  ) => Effect.Effect<ReadonlyArray<DueWorkflow>, StorageError>
  /**
   * Marks each workflow's outputs expired at its given time (the rows stay) and the workflow as
   * swept, releasing its claim; a workflow already marked is left as it is (not counted).
   */
  readonly markExpired: (
    expired: ReadonlyArray<{ readonly id: string; readonly expired_at: DateTime.Utc }>
  ) => Effect.Effect<MarkedExpired, StorageError>
  /**
   * Deletes the events of up to `limit` finished workflows that ended at or before `before` and
   * were not pruned yet (their last sequence number stays); how many workflows and events.
   */
  readonly pruneEvents: (
    before: DateTime.Utc,
    limit: number
  ) => Effect.Effect<{ readonly workflows: number; readonly events: number }, StorageError>
  /**
   * Deletes up to `limit` webhook deliveries that ended (delivered or failed) with their outcome
   * at or before `before` (delivered: when delivered; failed: the end of its retry window).
   */
  readonly pruneDeliveries: (before: DateTime.Utc, limit: number) => Effect.Effect<number, StorageError>
  /** Bytes of the outputs not expired (what the store holds for them; inputs live only while a workflow runs). */
  readonly storedBytes: Effect.Effect<number, StorageError>
}>()("@wes/core/RetentionRepository") {}
