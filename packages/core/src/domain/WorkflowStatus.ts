/**
 * The workflow state machine (design.md section 5). `transitions` is the table; `planTransition`
 * turns one move (or a short chain of moves that must happen together) into a `TransitionPlan`:
 * the guard (the statuses it may start from), the fields it sets and the events it logs. Every
 * store applies plans: the memory store with `applyPlan`, PostgreSQL as one guarded `UPDATE`. So
 * a move is one store operation that never reads the record first. Terminal states are final.
 *
 *   accepted -> uploaded -> queued -> running -> completed | failed
 *   accepted | uploaded -> invalid          (runner rejected the prompt)
 *   accepted | uploaded | queued -> failed  (runner unavailable / lost)
 *   any non-terminal -> accepted            (retried on another runner after a retryable failure)
 *   any non-terminal -> cancelled
 */
import * as Data from "effect/Data"
import * as DateTime from "effect/DateTime"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { IllegalTransition } from "./Errors.js"
import {
  assignTo,
  isTerminal,
  type RunnerRef,
  type Workflow,
  type WorkflowAttempt,
  WorkflowAttempt as WorkflowAttemptSchema,
  type WorkflowStatus,
  type WorkflowSummary
} from "./Workflow.js"

/** Failure details recorded on a failed or invalid workflow. */
export interface FailureDetails {
  readonly error_node: string | null
  readonly exception_type: string
  readonly exception_message: string
}

/** The data of a `retry` event: the attempt as the detail shows it. */
const encodeAttempt = Schema.encodeSync(WorkflowAttemptSchema)

/** An event that moves (or updates) a workflow. */
export type WorkflowTransition = Data.TaggedEnum<{
  /** File parameters are on the runner (or there were none). */
  Uploaded: {}
  /** The runner accepted the prompt. */
  Queued: { readonly prompt_id: string; readonly queue_number: number | null }
  /** The prompt's position in the runner's pending list changed. */
  QueueMoved: { readonly queue_number: number }
  /** Execution started (at the runner's timestamp when known). */
  Started: { readonly at?: DateTime.Utc | undefined }
  /**
   * Execution finished successfully (at the runner's timestamp when known). `noticed_at`: when
   * WES learned of the end, before copying the outputs; the move records `transfer_ms` from it.
   */
  Completed: { readonly at?: DateTime.Utc | undefined; readonly noticed_at?: DateTime.Utc | undefined }
  /** Execution failed, or no runner could take the workflow, or the runner lost it. */
  Failed: FailureDetails
  /** The runner rejected the prompt as invalid. */
  Rejected: FailureDetails
  /** Cancelled by its owner. */
  Cancelled: {}
  /** Moved to another runner before it was queued (the first could not take it); counted in `dispatch_attempts`. */
  Reassigned: { readonly runner: RunnerRef }
  /**
   * A retryable failure on its runner (lost, out of memory): back to `accepted` on another
   * runner, with the run that failed appended to `attempts` (the whole list: the caller's copy
   * plus the new one).
   */
  Retried: { readonly runner: RunnerRef; readonly attempts: ReadonlyArray<WorkflowAttempt> }
}>
export const WorkflowTransition = Data.taggedEnum<WorkflowTransition>()
export type TransitionTag = WorkflowTransition["_tag"]

const active: ReadonlyArray<WorkflowStatus> = ["accepted", "uploaded", "queued", "running"]

/** The table: for each event, the states it may start from and the state it leads to. */
export const transitions: {
  readonly [T in TransitionTag]: { readonly from: ReadonlyArray<WorkflowStatus>; readonly to: WorkflowStatus | "same" }
} = {
  Uploaded: { from: ["accepted"], to: "uploaded" },
  Queued: { from: ["uploaded"], to: "queued" },
  QueueMoved: { from: ["queued"], to: "same" },
  Started: { from: ["queued"], to: "running" },
  Completed: { from: ["running"], to: "completed" },
  Failed: { from: active, to: "failed" },
  Rejected: { from: ["accepted", "uploaded"], to: "invalid" },
  Cancelled: { from: active, to: "cancelled" },
  Reassigned: { from: ["accepted", "uploaded"], to: "same" },
  Retried: { from: active, to: "accepted" }
}

/** True when `event` may be applied in `status`. */
export const canApply = (status: WorkflowStatus, event: TransitionTag): boolean => transitions[event].from.includes(status)

/** The fields a plan may set: everything a move changes besides `status`. */
export type PlannedFields = Partial<
  Pick<
    Workflow,
    | "updated_at"
    | "started_at"
    | "completed_at"
    | "prompt_id"
    | "queue_number"
    | "error_node"
    | "exception_type"
    | "exception_message"
    | "user_runner_id"
    | "managed_runner_id"
    | "submitted_at"
    | "attempts"
    | "transfer_ms"
  >
>

/**
 * An event a plan logs. A `status` / `done` event carries the workflow's summary after the whole
 * plan with `override` on top (the summary as it was after that step of a chain); a `queue`
 * event carries its data.
 */
export type PlannedEvent =
  | { readonly type: "status" | "done"; readonly override: Partial<Pick<WorkflowSummary, "status" | "started_at" | "completed_at">> }
  | { readonly type: "queue"; readonly data: { readonly queue_number: number } }
  | { readonly type: "retry"; readonly data: unknown }

/** One store operation: if the status is one of `from`, set `status` and `set`, and log `events`. */
export interface TransitionPlan {
  readonly tags: ReadonlyArray<TransitionTag>
  readonly from: ReadonlyArray<WorkflowStatus>
  /** The status after the plan, or undefined when it keeps the current one. */
  readonly status: WorkflowStatus | undefined
  readonly set: PlannedFields
  /** Add one to `dispatch_attempts` (moved to another runner). */
  readonly bumpAttempts: boolean
  /** Drop the dispatcher's claim on the workflow (it now belongs to another runner's queue). */
  readonly releaseClaim: boolean
  readonly events: ReadonlyArray<PlannedEvent>
  /**
   * How many of `events` the moves before the last one logged. A request's own events (the run
   * events that came before an end) go after them and before the last move's: a chain that walks
   * a workflow through `running` to its end logs `running`, the run, then the end.
   */
  readonly beforeLast: number
}

const fieldsOf = (event: WorkflowTransition, at: DateTime.Utc): PlannedFields => {
  switch (event._tag) {
    case "Uploaded":
      return {}
    case "Queued":
      return { prompt_id: event.prompt_id, queue_number: event.queue_number }
    case "QueueMoved":
      return { queue_number: event.queue_number }
    case "Started":
      // Position 0: the prompt is the one the runner is executing.
      return { started_at: event.at ?? at, queue_number: 0 }
    case "Completed":
      return event.noticed_at === undefined
        ? { completed_at: event.at ?? at }
        : { completed_at: event.at ?? at, transfer_ms: Math.max(0, DateTime.toEpochMillis(at) - DateTime.toEpochMillis(event.noticed_at)) }
    case "Cancelled":
      return { completed_at: at }
    case "Failed":
    case "Rejected":
      return {
        completed_at: at,
        error_node: event.error_node,
        exception_type: event.exception_type,
        exception_message: event.exception_message
      }
    case "Reassigned":
      // A new runner has never seen this prompt: nothing to ask it before submitting.
      return { ...assignTo(event.runner), submitted_at: null }
    case "Retried":
      return {
        ...assignTo(event.runner),
        submitted_at: null,
        prompt_id: null,
        queue_number: null,
        started_at: null,
        attempts: event.attempts
      }
  }
}

/**
 * The plan of `steps` applied in order at `at`, or `IllegalTransition` when the chain is not a
 * path of the table (each later step must be allowed from where the one before leads).
 */
export const planTransition = (
  steps: readonly [WorkflowTransition, ...Array<WorkflowTransition>],
  at: DateTime.Utc
): Result.Result<TransitionPlan, IllegalTransition> => {
  const first = transitions[steps[0]._tag]
  let possible: ReadonlyArray<WorkflowStatus> = first.from
  let status: WorkflowStatus | undefined
  let set: PlannedFields = { updated_at: at }
  const logged: Array<{ readonly step: number; readonly event: PlannedEvent }> = []
  for (const [i, step] of steps.entries()) {
    const rule = transitions[step._tag]
    const blocked = possible.find((s) => !rule.from.includes(s))
    if (blocked !== undefined) {
      return Result.fail(new IllegalTransition({
        workflow_id: "",
        from: blocked,
        event: step._tag,
        message: `A chain of moves cannot go from ${blocked} by ${step._tag}`
      }))
    }
    if (rule.to !== "same") {
      status = rule.to
      possible = [rule.to]
      logged.push({ step: i, event: { type: "status", override: { status: rule.to } } })
      if (isTerminal(rule.to)) logged.push({ step: i, event: { type: "done", override: { status: rule.to } } })
    } else if (step._tag === "QueueMoved") {
      logged.push({ step: i, event: { type: "queue", data: { queue_number: step.queue_number } } })
    }
    if (step._tag === "Retried") {
      const attempt = step.attempts[step.attempts.length - 1]
      if (attempt !== undefined) logged.push({ step: i, event: { type: "retry", data: encodeAttempt(attempt) } })
    }
    set = { ...set, ...fieldsOf(step, at) }
  }
  // started_at and completed_at are each set once (by Started, by the terminal move), so in the
  // summary of an earlier step of the chain they are still null.
  const startedBy = steps.findIndex((s) => s._tag === "Started")
  const endedBy = steps.findIndex((s) => "completed_at" in fieldsOf(s, at))
  const events = logged.map(({ event, step }): PlannedEvent =>
    event.type === "queue" || event.type === "retry" ? event : {
      type: event.type,
      override: {
        ...event.override,
        ...(startedBy > step ? { started_at: null } : {}),
        ...(endedBy > step ? { completed_at: null } : {})
      }
    }
  )
  const reassigned = steps.some((s) => s._tag === "Reassigned")
  const retried = steps.some((s) => s._tag === "Retried")
  return Result.succeed({
    tags: steps.map((s) => s._tag),
    from: first.from,
    status,
    set,
    bumpAttempts: reassigned,
    releaseClaim: reassigned || retried,
    events,
    beforeLast: logged.filter((l) => l.step < steps.length - 1).length
  })
}

/**
 * A plan's events (in whatever form a store builds them) with what the request carries (its run
 * events, its outputs' events) placed between the moves before the last and the last move's.
 */
export const withCarried = <A>(plan: TransitionPlan, planned: ReadonlyArray<A>, carried: ReadonlyArray<A>): ReadonlyArray<A> => [
  ...planned.slice(0, plan.beforeLast),
  ...carried,
  ...planned.slice(plan.beforeLast)
]

/** `w` after `plan`, or `IllegalTransition` when its status is not one the plan may start from. */
export const applyPlan = (w: Workflow, plan: TransitionPlan): Result.Result<Workflow, IllegalTransition> =>
  plan.from.includes(w.status)
    ? Result.succeed({
      ...w,
      ...plan.set,
      status: plan.status ?? w.status,
      dispatch_attempts: plan.bumpAttempts ? w.dispatch_attempts + 1 : w.dispatch_attempts
    })
    : Result.fail(new IllegalTransition({
      workflow_id: w.id,
      from: w.status,
      event: plan.tags.join("+"),
      message: `Workflow ${w.id} cannot go from ${w.status} by ${plan.tags.join(" + ")}`
    }))

/**
 * Applies `event` to `w` at time `now`: the new record, or `IllegalTransition` when the table
 * forbids it. Sets started_at, completed_at (every terminal state), prompt_id, queue_number and
 * the failure fields, and always updated_at.
 */
export const applyTransition = (
  w: Workflow,
  event: WorkflowTransition,
  now: DateTime.Utc
): Result.Result<Workflow, IllegalTransition> =>
  Result.flatMap(planTransition([event], now), (plan) => applyPlan(w, plan))
