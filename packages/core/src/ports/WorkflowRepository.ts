/**
 * Storage of workflows, their outputs and the writes of their lives. Every write is one store
 * operation: `create` stores a workflow with its first event and wakes its runner's dispatcher;
 * `transition` moves one by a guarded plan (no read first), logging the move's events and the
 * outputs it records with it. PostgreSQL does each in one statement (and batches transitions
 * that arrive together); the memory store in one synchronous step.
 */
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { StorageError } from "../domain/Errors.js"
import type { LimitReached } from "../domain/LimitReached.js"
import type { PageRequest, Paged } from "../domain/Pagination.js"
import {
  type RunnerRef,
  Workflow,
  type WorkflowHead,
  type WorkflowOutput,
  type WorkflowStatus,
  type WorkflowSummary
} from "../domain/Workflow.js"
import type { NewWorkflowEvent } from "./WorkflowEvents.js"
import type { WorkflowTransition } from "../domain/WorkflowStatus.js"

/** Filters of the workflow list. */
export interface WorkflowListQuery extends PageRequest {
  readonly status?: WorkflowStatus | undefined
  /** Only workflows carrying this (normalized) tag. */
  readonly tag?: string | undefined
}

/** Bounds checked atomically with a create. */
export interface WorkflowInsertLimits {
  /** Most unfinished workflows the user may have, counting the new one. */
  readonly active_workflows: number
  /** Most workflows the user may create on the UTC day of `day_start`, counting the new one. */
  readonly workflows_per_day: number
  /** Start of the current UTC day. */
  readonly day_start: DateTime.Utc
}

/** The create carried an `Idempotency-Key` already used by this user within the window. */
export class DuplicateIdempotencyKey extends Schema.TaggedError<DuplicateIdempotencyKey>()(
  "DuplicateIdempotencyKey",
  { existing: Workflow }
) {}

export interface WorkflowInsertOptions {
  readonly limits?: WorkflowInsertLimits | undefined
  /** A key older than this no longer counts as a duplicate (and is released). */
  readonly idempotency_since?: DateTime.Utc | undefined
}

/** One move of one workflow: `steps` applied together, guarded by the first one's table row. */
export interface TransitionRequest {
  readonly id: string
  readonly steps: readonly [WorkflowTransition, ...Array<WorkflowTransition>]
  readonly at: DateTime.Utc
  /** Only the workflow of this user (others behave as missing): moves a client asks for. */
  readonly owner?: string | undefined
  /** Output files recorded with the move, each announced by an `output` event before its status events. */
  readonly outputs?: ReadonlyArray<WorkflowOutput> | undefined
  /**
   * Events logged, if the move applies, after the statuses of a chain's earlier moves and before
   * the last move's (run events that came just before it: a chain that walks a workflow through
   * `running` to its end logs `running`, the run, then the end).
   */
  readonly events?: ReadonlyArray<NewWorkflowEvent> | undefined
}

/** How a transition ended: applied (the workflow after it), refused by the guard, or no such workflow. */
export type TransitionOutcome =
  | { readonly _tag: "Applied"; readonly workflow: WorkflowHead }
  | { readonly _tag: "Refused"; readonly status: WorkflowStatus }
  | { readonly _tag: "Missing" }

/** Workflows by id and by owner; every `...ForUser` method treats another user's id as missing. */
export class WorkflowRepository extends Context.Service<WorkflowRepository, {
  /**
   * Stores a new workflow (status accepted) with its first `status` event, and wakes the
   * dispatcher of its runner; `limits` and the idempotency key are checked atomically with it.
   */
  readonly create: (
    workflow: Workflow,
    options?: WorkflowInsertOptions
  ) => Effect.Effect<Workflow, LimitReached | DuplicateIdempotencyKey | StorageError>
  /** Applies a guarded move (see `planTransition`), with its events and outputs. */
  readonly transition: (request: TransitionRequest) => Effect.Effect<TransitionOutcome, StorageError>
  readonly findById: (id: string) => Effect.Effect<Option.Option<Workflow>, StorageError>
  readonly findForUser: (userId: string, id: string) => Effect.Effect<Option.Option<Workflow>, StorageError>
  /** The workflow without its definition. */
  readonly findHeadForUser: (userId: string, id: string) => Effect.Effect<Option.Option<WorkflowHead>, StorageError>
  /** The workflow this user created with `key` at or after `since`. */
  readonly findByIdempotencyKey: (
    userId: string,
    key: string,
    since: DateTime.Utc
  ) => Effect.Effect<Option.Option<Workflow>, StorageError>
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
  /** Unfinished workflows of every user by status (absent: zero); the `wes_workflows` gauge. */
  readonly countUnfinishedByStatus: Effect.Effect<ReadonlyMap<WorkflowStatus, number>, StorageError>
  /** Unfinished workflows per runner id, for the given runners (absent: zero). */
  readonly countInFlight: (runnerIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, number>, StorageError>
  /**
   * Unfinished workflows of a runner that may be on it (queued, running, or claimed for
   * submission), oldest first, at most `limit`, without definitions (reconciliation).
   */
  readonly listSubmittedOnRunner: (runnerId: string, limit: number) => Effect.Effect<ReadonlyArray<WorkflowHead>, StorageError>
  /** Every runner that has unfinished workflows. */
  readonly unfinishedRunners: Effect.Effect<ReadonlyArray<RunnerRef>, StorageError>
  /** The outputs of a workflow, in the order they were recorded. */
  readonly listOutputs: (workflowId: string) => Effect.Effect<ReadonlyArray<WorkflowOutput>, StorageError>
}>()("@wes/core/WorkflowRepository") {}
