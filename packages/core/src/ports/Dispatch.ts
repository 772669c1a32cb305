/**
 * How dispatcher instances share work through the store (design.md section 6). One instance
 * "drives" a runner at a time: it holds the runner's WebSocket, submits the workflows assigned to
 * that runner and follows them. The memory store has one instance, which drives every runner;
 * PostgreSQL gives each runner to one live instance through a renewable lease.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { StorageError } from "../domain/Errors.js"
import type { Workflow } from "../domain/Workflow.js"
import type { Waiting } from "../domain/Ordering.js"

/**
 * A claimed workflow. Claiming marks it as possibly posted (`submitted_at`), so whoever claims it
 * next asks the runner before posting again; `resubmit` says an earlier claim had marked it.
 */
export interface ClaimedWorkflow {
  readonly workflow: Workflow
  readonly resubmit: boolean
}

/** A runner's waiting work and each user's work on it (see `DispatchQueue.waitingOn`). */
export interface RunnerQueue {
  readonly waiting: ReadonlyArray<Waiting>
  readonly onRunner: ReadonlyMap<string, number>
}

/** What `DispatchQueue.wakeups` says when any runner may have work (e.g. after a store's listener reconnected). */
export const WAKE_ALL = "*"

/** Workflows waiting to be submitted, claimed with a lease so two instances never both submit one. */
export class DispatchQueue extends Context.Service<DispatchQueue, {
  /**
   * Claims up to `limit` workflows assigned to `runnerId` that wait for submission (accepted or
   * uploaded) and hold no live lease (the caller's own included), first in the order of
   * `orderWaiting` (Ordering.ts: effective priority with one level per `agingMs` waited, then fair
   * share across users, where a user's workflows on the runner are those queued or running there
   * or claimed with a live lease, then age), for `owner` until `leaseMs` from now, in one step;
   * each is marked `submitted_at` (when not already). Returned in that order.
   */
  readonly claim: (
    runnerId: string,
    owner: string,
    limit: number,
    leaseMs: number,
    agingMs: number
  ) => Effect.Effect<ReadonlyArray<ClaimedWorkflow>, StorageError>
  /**
   * What waits on `runnerId` (accepted or uploaded, no live claim: at most `limit`, oldest first)
   * and each user's workflows on it (queued, running, or claimed with a live lease): what the
   * claim orders, read for queue positions.
   */
  readonly waitingOn: (runnerId: string, limit: number) => Effect.Effect<RunnerQueue, StorageError>
  /**
   * Which of `runnerIds` have work a claim would take now (accepted or uploaded, no live claim):
   * one read for every runner an instance drives, so that claims left by a dead instance, which
   * expire without a wake-up, are found without each driver claiming on a timer.
   */
  readonly claimable: (runnerIds: ReadonlyArray<string>) => Effect.Effect<ReadonlySet<string>, StorageError>
  /** Extends the leases `owner` holds on `ids`. */
  readonly renew: (ids: ReadonlyArray<string>, owner: string, leaseMs: number) => Effect.Effect<void, StorageError>
  /** Gives up `owner`'s claims on `ids` (a submission given back for later). */
  readonly release: (ids: ReadonlyArray<string>, owner: string) => Effect.Effect<void, StorageError>
  /** Tells every instance that `runnerId` has new work. */
  readonly notify: (runnerId: string) => Effect.Effect<void, StorageError>
  /**
   * Runner ids with new work, as `notify` announces them (may repeat, may coalesce), or
   * `WAKE_ALL` when any runner may have work (e.g. after a store's listener reconnected).
   */
  readonly wakeups: Stream.Stream<string>
}>()("@wes/core/DispatchQueue") {}

/** This instance's right to drive a runner. */
export interface RunnerLease {
  /** The WebSocket client id to connect and submit with while the lease lasts. */
  readonly clientId: string
  /** Completes if the lease is lost (another instance took the runner over). */
  readonly lost: Effect.Effect<void>
  /**
   * True while the lease is certainly still this instance's, judged locally and synchronously
   * (no round trip) with a safety margin. Checked before posting a prompt, and by the client as
   * the request is written (`SubmitPrompt.fence`): an instance that was paused past its lease
   * must not post what another instance may already have taken over.
   */
  readonly held: () => boolean
}

export class RunnerOwnership extends Context.Service<RunnerOwnership, {
  /** This instance's name (for claims and leases). */
  readonly instanceId: string
  /**
   * Becomes the driver of `runnerId` until the scope closes (then the lease is released), or
   * none if a live instance already drives it.
   */
  readonly acquire: (runnerId: string) => Effect.Effect<Option.Option<RunnerLease>, StorageError, Scope.Scope>
}>()("@wes/core/RunnerOwnership") {}
