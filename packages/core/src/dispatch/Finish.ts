/**
 * Recording how a prompt ended, from the runner's history or from the run as the socket showed
 * it: its outputs are brought into the blob store (Outputs.ts), then one store write records them
 * with the end (completed, or failed with the runner's node and exception). Steps the driver did not see (queued, started) are written in the
 * same write, so a workflow whose events were missed still walks every status. Then an agent
 * runner is asked to delete the run's files from its disk (Cleanup.ts), beside the driver.
 */
import type { AccountRepository } from "../ports/AccountRepository.js"
import type { TierPolicy } from "../domain/Tier.js"
import type { Scheduler } from "../usecases/Scheduler.js"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { type PromptHistory, RunnerGateway } from "../ports/RunnerGateway.js"
import type { BlobStore } from "../ports/BlobStore.js"
import type { StorageError } from "../domain/Errors.js"
import type { IdGenerator } from "../domain/Ids.js"
import { retryAfterFailure } from "../domain/RetryAfterFailure.js"
import { isTerminal, type WorkflowOutput, type WorkflowStatus } from "../domain/Workflow.js"
import { type NewWorkflowEvent, WorkflowEventBus } from "../ports/WorkflowEvents.js"
import type { WorkflowRepository } from "../ports/WorkflowRepository.js"
import { WorkflowTransition } from "../domain/WorkflowStatus.js"
import { Driving } from "./Driving.js"
import type { Phase } from "./InFlight.js"
import { transition } from "../usecases/Lifecycle.js"
import { keepOutputs } from "./Outputs.js"
import { cleanupRun } from "./Cleanup.js"
import { failOrRetry } from "./Retry.js"
import { RunTimes } from "../usecases/RunTimes.js"
import type { SeenHistory } from "./SeenRun.js"

/** A prompt's history, missing right after its end, is read again three times, 200 ms apart. */
const historyRetries = Schedule.spaced("200 millis").pipe(Schedule.upTo({ times: 3 }))

/**
 * The moves from `status` to the end `history` reports (`end` replaces it, e.g. outputs lost).
 * `noticedAt`: when WES learned of the end (a completion records `transfer_ms` from it).
 */
export const endSteps = (
  id: string,
  status: WorkflowStatus,
  history: PromptHistory,
  end?: WorkflowTransition,
  noticedAt?: DateTime.Utc
): readonly [WorkflowTransition, ...Array<WorkflowTransition>] => {
  const at = (ms: number | null) => (ms === null ? undefined : DateTime.makeUnsafe(ms))
  const last = end ?? (history.outcome === "success"
    ? WorkflowTransition.Completed({ at: at(history.completed_at), noticed_at: noticedAt })
    : history.outcome === "error"
    ? WorkflowTransition.Failed({
      error_node: history.error?.node_id ?? null,
      exception_type: history.error?.exception_type ?? "ExecutionError",
      exception_message: history.error?.exception_message ?? "The runner reported an error"
    })
    // Interrupted without a cancel from its owner (a cancelled workflow is already terminal).
    : WorkflowTransition.Failed({
      error_node: history.error?.node_id ?? null,
      exception_type: "ExecutionInterrupted",
      exception_message: "The run was interrupted on the runner"
    }))
  const queued = WorkflowTransition.Queued({ prompt_id: id, queue_number: 0 })
  const started = WorkflowTransition.Started({ at: at(history.started_at) })
  switch (status) {
    case "accepted":
      return [WorkflowTransition.Uploaded(), queued, started, last]
    case "uploaded":
      return [queued, started, last]
    case "queued":
      return [started, last]
    default:
      return [last]
  }
}

/**
 * After an end that was not recorded (interrupted, or the store failed): back to the runner's
 * side, so that reconciliation reads the history again; a workflow left `finishing` would never
 * be looked at again.
 */
const backToRunner = (id: string) => <A, E>(exit: Exit.Exit<A, E>): Effect.Effect<void, never, Driving> =>
  Exit.isSuccess(exit) ? Effect.void : Effect.flatMap(Driving, (d) => Effect.asVoid(d.inFlight.shift(id, ["finishing"], "onRunner")))

/**
 * Records the end `history` reports for a workflow this driver is finishing (phase `finishing`),
 * with the run events not written yet (`leading`, written first), then lets go of it. A guard refused because the driver's copy of the status was behind is
 * retried once from the status the store reported. `noticedAt`: when WES learned of the end
 * (default: now); a completion's `transfer_ms` counts from it.
 */
export const recordEnd = (
  id: string,
  history: SeenHistory,
  leading: ReadonlyArray<NewWorkflowEvent> = [],
  noticedAt?: DateTime.Utc
) =>
  Effect.onExit(Effect.gen(function*() {
    const noticed = noticedAt ?? (yield* DateTime.now)
    const driving = yield* Driving
    const tracked = yield* driving.inFlight.get(id)
    if (Option.isNone(tracked)) return
    let end: WorkflowTransition | undefined
    let outputs: ReadonlyArray<WorkflowOutput> = []
    if (history.outcome === "success") {
      // A runner cannot be deleted while it has work; a managed one that left the configuration
      // has nothing to copy from.
      const kept = yield* keepOutputs(tracked.value, history)
      switch (kept._tag) {
        case "NoRunner":
          return
        case "Following": {
          if (leading.length > 0) yield* Effect.flatMap(WorkflowEventBus, (bus) => bus.publish(id, leading))
          return yield* Effect.asVoid(driving.inFlight.shift(id, ["finishing"], "onRunner"))
        }
        case "Lost":
          end = kept.end
          break
        case "Kept":
          outputs = kept.outputs
      }
    }
    if (history.outcome === "error" && end === undefined) {
      // Out of memory: retried on another runner when allowed (Retry.ts).
      const failed = endSteps(id, "running", history)[0]
      if (failed._tag === "Failed") {
        const { _tag: _, ...details } = failed
        const at = history.started_at === null ? tracked.value.workflow.started_at : DateTime.makeUnsafe(history.started_at)
        const chosen = yield* failOrRetry(tracked.value.workflow, details, at)
        if (chosen._tag === "Retried") end = chosen
      }
    }
    if (history.outcome === "success" && end === undefined && history.started_at !== null && history.completed_at !== null) {
      const runTimes = yield* Effect.serviceOption(RunTimes)
      if (Option.isSome(runTimes)) yield* runTimes.value.record(driving.ref.id, history.completed_at - history.started_at)
    }
    let status = tracked.value.workflow.status
    /** Whether the run is over for WES: its end written, or the workflow ended (or gone) otherwise. */
    let settled = false
    for (let attempt = 0; attempt < 2; attempt++) {
      const outcome = yield* transition(id, endSteps(id, status, history, end, noticed), { outputs, events: leading })
      settled = outcome._tag !== "Refused" || isTerminal(outcome.status)
      if (outcome._tag !== "Refused" || isTerminal(outcome.status) || outcome.status === status) break
      status = outcome.status
    }
    yield* driving.inFlight.remove(id)
    // Its outputs are in WES now (or it ended without): an agent runner deletes the run's files.
    if (settled) yield* cleanupRun(tracked.value.workflow, history.outputs)
  }), backToRunner(id))

/**
 * On `executing {node: null}`, or when a prompt left the runner's queue: records the end, from
 * `seen` (the run as the WebSocket showed it whole, SeenRun.ts) or else from the history (written
 * just before). Only one path finishes a workflow (the one that moves it from
 * a phase of `from` to `finishing`); the others see it taken. `executing {node: null}` may come
 * before the submission that posted the prompt has recorded it, so Track passes `submitting` too.
 * No history yet: back to `onRunner`, and reconciliation looks again.
 */
export const finish = (
  id: string,
  from: ReadonlyArray<Phase> = ["onRunner"],
  leading: ReadonlyArray<NewWorkflowEvent> = [],
  seen?: SeenHistory
): Effect.Effect<
  void,
  StorageError,
  Driving | RunnerGateway | WorkflowRepository | WorkflowEventBus | BlobStore | IdGenerator | AccountRepository | TierPolicy | Scheduler
> =>
  Effect.gen(function*() {
    const driving = yield* Driving
    if (!(yield* driving.inFlight.shift(id, from, "finishing"))) {
      if (leading.length > 0) yield* Effect.flatMap(WorkflowEventBus, (bus) => bus.publish(id, leading))
      return
    }
    const noticedAt = yield* DateTime.now
    if (seen !== undefined) return yield* recordEnd(id, seen, leading, noticedAt)
    const gateway = yield* RunnerGateway
    const bus = yield* WorkflowEventBus
    const target = yield* driving.target
    const history = Option.isNone(target) ? Option.none<PromptHistory>() : yield* gateway.history(target.value, id).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.fail("not yet" as const), onSome: Effect.succeed })),
      (read) => retryAfterFailure(read, historyRetries),
      Effect.option
    )
    if (Option.isNone(history)) {
      if (leading.length > 0) yield* bus.publish(id, leading)
      return yield* Effect.asVoid(driving.inFlight.shift(id, ["finishing"], "onRunner"))
    }
    yield* recordEnd(id, history.value, leading, noticedAt)
  }).pipe(Effect.onExit(backToRunner(id)))
