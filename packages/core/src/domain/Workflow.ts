/** The workflow resource: its record, the contract's summary and detail forms, and its outputs. */
import * as DateTime from "effect/DateTime"
import * as Schema from "effect/Schema"
import * as Struct from "effect/Struct"
import { ManagedRunnerId, OutputId, RunnerId, UserId, WorkflowId } from "./Ids.js"
import { Int, JsonObject, Timestamp } from "./Json.js"
import { ModelFiles } from "./ModelFiles.js"

export const WorkflowStatus = Schema.Literals(["accepted",
  "uploaded",
  "queued",
  "running",
  "completed",
  "cancelled",
  "invalid",
  "failed"]).annotate({
  identifier: "WorkflowStatus",
  message: "must be one of accepted, uploaded, queued, running, completed, cancelled, invalid, failed"
})
export type WorkflowStatus = typeof WorkflowStatus.Type

/** States no event can leave. */
export const terminalStatuses: ReadonlyArray<WorkflowStatus> = ["completed", "cancelled", "invalid", "failed"]
/** States a workflow is "in flight" in: it counts toward a runner's load and the active-workflow limit. */
export const activeStatuses: ReadonlyArray<WorkflowStatus> = ["accepted", "uploaded", "queued", "running"]

export const isTerminal = (s: WorkflowStatus): boolean =>
  s === "completed" || s === "cancelled" || s === "invalid" || s === "failed"

/** How urgent a workflow is; on each runner higher priorities go first (dispatch/Ordering.ts). */
export const Priority = Schema.Literals(["low", "normal", "high"]).annotate({
  identifier: "Priority",
  message: "must be low, normal or high"
})
export type Priority = typeof Priority.Type

/**
 * One earlier run of a workflow that ended in a retryable failure (the runner was lost, or ran
 * out of memory) and was retried on another runner: where, when, and how it ended.
 */
export const WorkflowAttempt = Schema.Struct({
  runner_id: Schema.String,
  runner_kind: Schema.Literals(["user", "managed"]),
  started_at: Schema.NullOr(Timestamp),
  ended_at: Timestamp,
  error_node: Schema.NullOr(Schema.String),
  exception_type: Schema.String,
  exception_message: Schema.String
}).annotate({ identifier: "WorkflowAttempt" })
export interface WorkflowAttempt extends Schema.Schema.Type<typeof WorkflowAttempt> {}

/** `[placeholder, value]`, e.g. `["$text(prompt)", "a cat"]`; for files the value is the blob path. */
export const WorkflowParam = Schema.Tuple([Schema.String, Schema.String])
export type WorkflowParam = typeof WorkflowParam.Type

const summaryFields = {
  id: WorkflowId,
  name: Schema.String,
  status: WorkflowStatus,
  tags: Schema.Array(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp,
  started_at: Schema.NullOr(Timestamp),
  completed_at: Schema.NullOr(Timestamp)
}

const detailFields = {
  ...summaryFields,
  user_id: UserId,
  user_runner_id: Schema.NullOr(RunnerId),
  managed_runner_id: Schema.NullOr(ManagedRunnerId),
  workflow_json: JsonObject,
  workflow_params: Schema.Array(WorkflowParam),
  prompt_id: Schema.NullOr(Schema.String),
  queue_number: Schema.NullOr(Int),
  error_node: Schema.NullOr(Schema.String),
  exception_type: Schema.NullOr(Schema.String),
  exception_message: Schema.NullOr(Schema.String),
  priority: Priority,
  /** Earlier runs retried on another runner, oldest first (empty when none). */
  attempts: Schema.Array(WorkflowAttempt),
  /**
   * Milliseconds from WES learning that the run ended on its runner to the outputs copied into
   * WES and the completion stored (WES's clock; docs/decisions.md). Null until it completed.
   */
  transfer_ms: Schema.NullOr(Int),
  /** Where this workflow's webhooks go instead of its owner's endpoint (null: the owner's, if any). */
  webhook_url: Schema.NullOr(Schema.String),
  /** Model files an agent runner places before the prompt is posted (its template's and its own; empty: none). */
  models: ModelFiles
}

/** Summary form: create, rerun, list, cancel and the history operations. */
export const WorkflowSummary = Schema.Struct(summaryFields).annotate({ identifier: "WorkflowSummary" })
export interface WorkflowSummary extends Schema.Schema.Type<typeof WorkflowSummary> {}

/**
 * What get-workflow adds to the record while a workflow waits (dispatch/QueueEstimate.ts): how many
 * workflows will start before it on its runner, and when it may start from the runner's recent
 * run times. Null when not waiting, or not known.
 */
export const queueEstimateFields = {
  queue_position: Schema.NullOr(Int),
  estimated_start_at: Schema.NullOr(Timestamp)
}
export interface QueueEstimate extends Schema.Struct.Type<typeof queueEstimateFields> {}

/** A workflow as get-workflow answers it: the record and its queue estimate. */
export type WorkflowView = Workflow & QueueEstimate

/** How long a workflow waited and ran (derived from its timestamps; not stored). */
const timingFields = {
  /** Milliseconds from creation to the start of execution, once started. */
  queue_ms: Schema.NullOr(Int),
  /** Milliseconds of execution, once it ended after starting. */
  run_ms: Schema.NullOr(Int)
}

/** Detail form: get-workflow. */
export const WorkflowDetail = Schema.Struct({ ...detailFields, ...queueEstimateFields, ...timingFields }).annotate({
  identifier: "WorkflowDetail"
})
export interface WorkflowDetail extends Schema.Schema.Type<typeof WorkflowDetail> {}

/** The stored workflow: the detail form plus what the service keeps for itself. */
export const Workflow = Schema.Struct({
  ...detailFields,
  /** `Idempotency-Key` of the request that created it, if any. */
  idempotency_key: Schema.NullOr(Schema.String),
  /** Runners this workflow was moved away from because they could not take it. */
  dispatch_attempts: Int,
  /** Set just before a prompt is posted to a runner: after a restart, ask the runner before posting again. */
  submitted_at: Schema.NullOr(Timestamp)
}).annotate({ identifier: "Workflow" })
export interface Workflow extends Schema.Schema.Type<typeof Workflow> {}

/**
 * A stored workflow without its definition (`workflow_json`, the one large field): what every
 * path that does not submit or show the definition reads and gets back from a transition.
 */
export const WorkflowHead = Workflow.mapFields(Struct.omit(["workflow_json"])).annotate({ identifier: "WorkflowHead" })
export interface WorkflowHead extends Schema.Schema.Type<typeof WorkflowHead> {}

/** The summary form of a stored workflow. */
export const toSummary = (w: WorkflowHead): WorkflowSummary => ({
  id: w.id,
  name: w.name,
  status: w.status,
  tags: w.tags,
  created_at: w.created_at,
  updated_at: w.updated_at,
  started_at: w.started_at,
  completed_at: w.completed_at
})

/** The detail form of a stored workflow. */
// Fields listed one by one: spreading the summary into a larger object is ~100x slower in V8.
export const toDetail = (w: Workflow & Partial<QueueEstimate>): WorkflowDetail => ({
  queue_position: w.queue_position ?? null,
  estimated_start_at: w.estimated_start_at ?? null,
  id: w.id,
  name: w.name,
  status: w.status,
  tags: w.tags,
  created_at: w.created_at,
  updated_at: w.updated_at,
  started_at: w.started_at,
  completed_at: w.completed_at,
  user_id: w.user_id,
  user_runner_id: w.user_runner_id,
  managed_runner_id: w.managed_runner_id,
  workflow_json: w.workflow_json,
  workflow_params: w.workflow_params,
  prompt_id: w.prompt_id,
  queue_number: w.queue_number,
  error_node: w.error_node,
  exception_type: w.exception_type,
  exception_message: w.exception_message,
  priority: w.priority,
  attempts: w.attempts,
  transfer_ms: w.transfer_ms,
  webhook_url: w.webhook_url,
  models: w.models,
  queue_ms: w.started_at === null ? null : elapsedMs(w.created_at, w.started_at),
  run_ms: w.started_at === null || w.completed_at === null ? null : elapsedMs(w.started_at, w.completed_at)
})

const elapsedMs = (from: DateTime.Utc, to: DateTime.Utc): number => Math.max(0, DateTime.toEpochMillis(to) - DateTime.toEpochMillis(from))

/** Which runner a workflow is assigned to: exactly one kind at a time. */
export type RunnerRef =
  | { readonly kind: "user"; readonly id: RunnerId }
  | { readonly kind: "managed"; readonly id: ManagedRunnerId }

/** The runner a workflow is assigned to. */
export const runnerOf = (w: Pick<Workflow, "user_runner_id" | "managed_runner_id">): RunnerRef | undefined =>
  w.user_runner_id !== null
    ? { kind: "user", id: w.user_runner_id }
    : w.managed_runner_id !== null
    ? { kind: "managed", id: w.managed_runner_id }
    : undefined

/** The reference to a runner known by kind and id (a scheduler's choice). */
export const refOf = (runner: { readonly kind: "user" | "managed"; readonly id: string }): RunnerRef =>
  runner.kind === "user" ? { kind: "user", id: runner.id as RunnerId } : { kind: "managed", id: runner.id as ManagedRunnerId }

/** The record fields that name `ref`. */
export const assignTo = (ref: RunnerRef): Pick<Workflow, "user_runner_id" | "managed_runner_id"> =>
  ref.kind === "user"
    ? { user_runner_id: ref.id, managed_runner_id: null }
    : { user_runner_id: null, managed_runner_id: ref.id }

/** A file a finished workflow produced, copied from the runner into the blob store. */
export const WorkflowOutput = Schema.Struct({
  id: OutputId,
  workflow_id: WorkflowId,
  node_id: Schema.String,
  filename: Schema.String,
  subfolder: Schema.String,
  type: Schema.String,
  content_type: Schema.String,
  size: Int,
  blob_key: Schema.String,
  created_at: Timestamp,
  /** When the retention sweeper deleted its file (its workflow's end + the owner's `retention_days`); null while kept. */
  expired_at: Schema.NullOr(Timestamp)
}).annotate({ identifier: "WorkflowOutput" })
export interface WorkflowOutput extends Schema.Schema.Type<typeof WorkflowOutput> {}

/** The outputs endpoint's view of an output (no storage key). */
export const WorkflowOutputView = WorkflowOutput.mapFields(Struct.omit(["blob_key", "workflow_id", "created_at"]))
  .annotate({ identifier: "WorkflowOutputView" })
export interface WorkflowOutputView extends Schema.Schema.Type<typeof WorkflowOutputView> {}
