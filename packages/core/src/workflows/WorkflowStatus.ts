/**
 * The workflow state machine (design.md section 5). `transitions` is the table; `applyTransition`
 * is the one function that moves a workflow and sets the fields each move implies. Terminal
 * states are final: every event on them is an `IllegalTransition`.
 *
 *   accepted -> uploaded -> queued -> running -> completed | failed
 *   accepted | uploaded -> invalid          (runner rejected the prompt)
 *   accepted | uploaded | queued -> failed  (runner unavailable / lost)
 *   any non-terminal -> cancelled
 */
import * as Data from "effect/Data"
import * as DateTime from "effect/DateTime"
import * as Either from "effect/Either"
import { IllegalTransition } from "../shared/Errors.js"
import { assignTo, type RunnerRef, type Workflow, type WorkflowStatus } from "./Workflow.js"

/** Failure details recorded on a failed or invalid workflow. */
export interface FailureDetails {
  readonly error_node: string | null
  readonly exception_type: string
  readonly exception_message: string
}

/** An event that moves (or updates) a workflow. */
export type WorkflowTransition = Data.TaggedEnum<{
  /** File parameters are on the runner (or there were none). */
  Uploaded: {}
  /** Bookkeeping just before posting the prompt: `submitted_at` set (ask the runner before posting again). */
  Submitting: {}
  /** The runner accepted the prompt. */
  Queued: { readonly prompt_id: string; readonly queue_number: number | null }
  /** The prompt's position in the runner's pending list changed. */
  QueueMoved: { readonly queue_number: number }
  /** Execution started (at the runner's timestamp when known). */
  Started: { readonly at?: DateTime.Utc | undefined }
  /** Execution finished successfully. */
  Completed: { readonly at?: DateTime.Utc | undefined }
  /** Execution failed, or no runner could take the workflow, or the runner lost it. */
  Failed: FailureDetails
  /** The runner rejected the prompt as invalid. */
  Rejected: FailureDetails
  /** Cancelled by its owner. */
  Cancelled: {}
  /** Moved to another runner before it was queued (the first could not take it); counted in `dispatch_attempts`. */
  Reassigned: { readonly runner: RunnerRef }
}>
export const WorkflowTransition = Data.taggedEnum<WorkflowTransition>()
export type TransitionTag = WorkflowTransition["_tag"]

const active: ReadonlyArray<WorkflowStatus> = ["accepted", "uploaded", "queued", "running"]

/** The table: for each event, the states it may start from and the state it leads to. */
export const transitions: {
  readonly [T in TransitionTag]: { readonly from: ReadonlyArray<WorkflowStatus>; readonly to: WorkflowStatus | "same" }
} = {
  Uploaded: { from: ["accepted"], to: "uploaded" },
  Submitting: { from: ["uploaded"], to: "same" },
  Queued: { from: ["uploaded"], to: "queued" },
  QueueMoved: { from: ["queued"], to: "same" },
  Started: { from: ["queued"], to: "running" },
  Completed: { from: ["running"], to: "completed" },
  Failed: { from: active, to: "failed" },
  Rejected: { from: ["accepted", "uploaded"], to: "invalid" },
  Cancelled: { from: active, to: "cancelled" },
  Reassigned: { from: ["accepted", "uploaded"], to: "same" }
}

/** True when `event` may be applied in `status`. */
export const canApply = (status: WorkflowStatus, event: TransitionTag): boolean =>
  transitions[event].from.includes(status)

/** The status `event` leads to from `status` (assuming it is allowed). */
export const nextStatus = (status: WorkflowStatus, event: TransitionTag): WorkflowStatus => {
  const to = transitions[event].to
  return to === "same" ? status : to
}

/**
 * Applies `event` to `w` at time `now`: the new record, or `IllegalTransition` when the table
 * forbids it. Sets started_at, completed_at (every terminal state), prompt_id, queue_number and
 * the failure fields, and always updated_at.
 */
export const applyTransition = (
  w: Workflow,
  event: WorkflowTransition,
  now: DateTime.Utc
): Either.Either<Workflow, IllegalTransition> => {
  if (!canApply(w.status, event._tag)) {
    return Either.left(
      new IllegalTransition({
        workflow_id: w.id,
        from: w.status,
        event: event._tag,
        message: `Workflow ${w.id} cannot go from ${w.status} by ${event._tag}`
      })
    )
  }
  const status = nextStatus(w.status, event._tag)
  const base: Workflow = { ...w, status, updated_at: now }
  switch (event._tag) {
    case "Uploaded":
      return Either.right(base)
    case "Cancelled":
      return Either.right({ ...base, completed_at: now })
    case "Submitting":
      return Either.right({ ...base, submitted_at: now })
    case "Queued":
      return Either.right({ ...base, prompt_id: event.prompt_id, queue_number: event.queue_number })
    case "QueueMoved":
      return Either.right({ ...base, queue_number: event.queue_number })
    case "Started":
      // Position 0: the prompt is the one the runner is executing.
      return Either.right({ ...base, started_at: event.at ?? now, queue_number: 0 })
    case "Completed":
      return Either.right({ ...base, completed_at: event.at ?? now })
    case "Failed":
    case "Rejected":
      return Either.right({
        ...base,
        completed_at: now,
        error_node: event.error_node,
        exception_type: event.exception_type,
        exception_message: event.exception_message
      })
    case "Reassigned":
      // A new runner has never seen this prompt: nothing to ask it before submitting.
      return Either.right({ ...base, ...assignTo(event.runner), dispatch_attempts: w.dispatch_attempts + 1, submitted_at: null })
  }
}
