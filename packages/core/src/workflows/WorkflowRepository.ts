/** Storage of workflows and their outputs. */
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import type * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { NotFound, StorageError } from "../shared/Errors.js"
import type { LimitReached } from "../shared/LimitReached.js"
import type { PageRequest, Paged } from "../shared/Pagination.js"
import { Workflow, type RunnerRef, type WorkflowOutput, type WorkflowStatus, type WorkflowSummary } from "./Workflow.js"

/** Filters of the workflow list. */
export interface WorkflowListQuery extends PageRequest {
  readonly status?: WorkflowStatus | undefined
  /** Only workflows carrying this (normalized) tag. */
  readonly tag?: string | undefined
}

/** Bounds checked atomically with an insert. */
export interface WorkflowInsertLimits {
  /** Most unfinished workflows the user may have, counting the new one. */
  readonly active_workflows: number
  /** Most workflows the user may create since `day_start`, counting the new one. */
  readonly workflows_per_day: number
  readonly day_start: DateTime.Utc
}

/** The insert carried an `Idempotency-Key` already used by this user within the window. */
export class DuplicateIdempotencyKey extends Schema.TaggedError<DuplicateIdempotencyKey>()(
  "DuplicateIdempotencyKey",
  { existing: Workflow }
) {}

export interface WorkflowInsertOptions {
  readonly limits?: WorkflowInsertLimits | undefined
  /** A key older than this no longer counts as a duplicate (and is released). */
  readonly idempotency_since?: DateTime.Utc | undefined
}

/** Workflows by id and by owner; every `...ForUser` method treats another user's id as missing. */
export class WorkflowRepository extends Context.Tag("@wes/core/WorkflowRepository")<WorkflowRepository, {
  /** Stores a new workflow, checking `limits` and the idempotency key atomically with the insert. */
  readonly insert: (
    workflow: Workflow,
    options?: WorkflowInsertOptions
  ) => Effect.Effect<Workflow, LimitReached | DuplicateIdempotencyKey | StorageError>
  readonly findById: (id: string) => Effect.Effect<Option.Option<Workflow>, StorageError>
  readonly findForUser: (userId: string, id: string) => Effect.Effect<Option.Option<Workflow>, StorageError>
  /** The workflow this user created with `key` at or after `since`. */
  readonly findByIdempotencyKey: (
    userId: string,
    key: string,
    since: DateTime.Utc
  ) => Effect.Effect<Option.Option<Workflow>, StorageError>
  /**
   * Read-modify-write of one workflow without lost updates: `f` sees the current record and
   * returns the next one or an error (nothing is written then).
   */
  readonly update: <E>(
    id: string,
    f: (current: Workflow) => Either.Either<Workflow, E>
  ) => Effect.Effect<Workflow, E | NotFound | StorageError>
  /** The user's workflows, newest first. */
  readonly list: (userId: string, query: WorkflowListQuery) => Effect.Effect<Paged<WorkflowSummary>, StorageError>
  /** The user's workflows assigned to `runner`, newest first, at most `limit`. */
  readonly history: (
    userId: string,
    runner: RunnerRef,
    limit: number
  ) => Effect.Effect<ReadonlyArray<WorkflowSummary>, StorageError>
  /** Unfinished workflows of the user. */
  readonly countActive: (userId: string) => Effect.Effect<number, StorageError>
  /** Workflows the user created at or after `since`. */
  readonly countCreatedSince: (userId: string, since: DateTime.Utc) => Effect.Effect<number, StorageError>
  /** Unfinished workflows per runner id, for the given runners (absent: zero). */
  readonly countInFlight: (runnerIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, number>, StorageError>
  /** Unfinished workflows in any of `statuses`, oldest first, at most `limit` (dispatch and recovery). */
  readonly listByStatus: (
    statuses: ReadonlyArray<WorkflowStatus>,
    limit: number
  ) => Effect.Effect<ReadonlyArray<Workflow>, StorageError>
  /** Unfinished workflows assigned to a runner, oldest first, at most `limit` (tracking and reconciliation). */
  readonly listUnfinishedOnRunner: (runnerId: string, limit: number) => Effect.Effect<ReadonlyArray<Workflow>, StorageError>
  /** Every runner that has unfinished workflows. */
  readonly unfinishedRunners: Effect.Effect<ReadonlyArray<RunnerRef>, StorageError>
  /** Records files a workflow produced. */
  readonly addOutputs: (outputs: ReadonlyArray<WorkflowOutput>) => Effect.Effect<void, StorageError>
  /** The outputs of a workflow, in the order they were added. */
  readonly listOutputs: (workflowId: string) => Effect.Effect<ReadonlyArray<WorkflowOutput>, StorageError>
}>() {}
