/**
 * Reconciliation (design.md section 5): after every (re)connection and on a timer, compare what
 * the store says is on this runner with the runner's `/queue` and `/history`, so that nothing
 * stays stuck after a gap in the events, a restart of the runner or a takeover from a dead
 * instance. In the queue: its position; in the history: its end; in neither: the runner lost it
 * (`RunnerLost`). A runner that does not answer for `runnerLostAfter` loses them too
 * (LostRunner.ts). Prompts on the runner of workflows that are no longer its own (cancelled while
 * the runner could not be told, given up while it did not answer) are removed from it.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import { RunnerGateway } from "../ports/RunnerGateway.js"
import { isTerminal, runnerOf } from "../domain/Workflow.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"
import { advance } from "./Advance.js"
import { Driving } from "./Driving.js"
import { recordEnd } from "./Finish.js"
import { answered, settled, unanswered } from "./LostRunner.js"
import { observe } from "./QueuePositions.js"
import { failOrRetry } from "./Retry.js"

/** Most workflows one reconciliation reads from the store (the oldest first). */
export const RECONCILE_LIMIT = 10_000

export const reconcile = Effect.gen(function*() {
  const driving = yield* Driving
  const gateway = yield* RunnerGateway
  const repo = yield* WorkflowRepository
  const target = yield* driving.refreshTarget
  if (Option.isNone(target)) return
  const runner = target.value
  // Adopt what this driver does not track yet (left by another instance, or before a restart);
  // forget what the store no longer has here (cancelled, finished or moved by someone else).
  const stored = yield* repo.listSubmittedOnRunner(driving.ref.id, RECONCILE_LIMIT)
  const storedIds = new Set<string>(stored.map((w) => w.id))
  for (const w of stored) {
    if (Option.isNone(yield* driving.inFlight.get(w.id))) yield* driving.inFlight.put({ workflow: w, phase: "onRunner" })
  }
  for (const t of yield* driving.inFlight.all) {
    if (t.phase === "onRunner" && !storedIds.has(t.workflow.id)) yield* driving.inFlight.remove(t.workflow.id)
  }
  // Only what was on the runner before its queue is read: a post answered while /queue was being
  // read is on the runner but may be missing from the snapshot, and is not lost.
  const onRunner = (yield* driving.inFlight.all).filter((t) => t.phase === "onRunner")
  // The queue first: a prompt that leaves it in between is then found in the history. A runner
  // that does not answer for long is given up on (LostRunner.ts).
  const read = yield* Effect.result(gateway.queue(runner))
  if (Result.isFailure(read)) return yield* unanswered(read.failure)
  yield* answered
  const snapshot = read.success
  for (const before of onRunner) {
    const id = before.workflow.id
    const current = yield* driving.inFlight.get(id)
    // Gone, no longer on the runner, or posted again meanwhile (a new submission): next time.
    if (Option.isNone(current) || current.value.phase !== "onRunner" || current.value.recorded !== before.recorded) continue
    const t = current.value
    if (snapshot.running.includes(id)) {
      yield* observe(id, 0)
      continue
    }
    if (snapshot.pending.includes(id)) {
      yield* observe(id, snapshot.pending.indexOf(id) + 1)
      continue
    }
    const history = yield* gateway.history(runner, id)
    if (Option.isSome(history)) {
      if (yield* driving.inFlight.shift(id, ["onRunner"], "finishing")) yield* recordEnd(id, history.value)
    } else if (t.workflow.status === "accepted" || t.workflow.status === "uploaded") {
      // Claimed, but its post never arrived: the claim loop submits it again once its claim expires.
      yield* driving.inFlight.remove(id)
    } else {
      // Lost: retried on another runner when the tier allows and one exists, else failed.
      const end = yield* failOrRetry(t.workflow, {
        error_node: null,
        exception_type: "RunnerLost",
        exception_message: "The runner no longer knows this prompt: it was restarted or the prompt was removed from its queue"
      })
      yield* advance(id, () => [end])
      // Retried: another runner's work now.
      if (end._tag === "Retried") yield* driving.inFlight.remove(id)
    }
  }
  // Prompts of workflows that are no longer this runner's: cancelled while the runner could not be
  // told, or given up while it did not answer (finished, or retried on another runner). Pending
  // ones first: interrupting the running one first would let the runner start the next.
  for (const id of [...snapshot.pending, ...snapshot.running]) {
    if (Option.isSome(yield* driving.inFlight.get(id))) continue
    const w = yield* repo.findById(id)
    if (Option.isSome(w) && (isTerminal(w.value.status) || runnerOf(w.value)?.id !== driving.ref.id)) {
      yield* gateway.cancel(runner, id).pipe(
        Effect.catch((e) => Effect.logWarning("could not remove a prompt from the runner", { runner_id: driving.ref.id, workflow_id: id, error: e.message }))
      )
    }
  }
  yield* settled
})

/**
 * Reconciles when asked (a (re)connection) and every `reconcileInterval`, jittered (80-120 %):
 * the drivers of runners started together (a wave of work, a restart) would otherwise all read
 * the store and their runner's `/queue` at the same instants, and the runner events arriving then
 * wait behind those reads (B6's tail, docs/decisions.md).
 */
export const reconcileLoop = Effect.gen(function*() {
  const driving = yield* Driving
  const once = reconcile.pipe(
    Effect.catch((e) => Effect.logWarning("could not reconcile with the runner", { runner_id: driving.ref.id, error: e.message }))
  )
  const asked = Queue.take(driving.reconcileNow).pipe(Effect.andThen(once), Effect.forever)
  yield* Effect.raceFirst(asked, Effect.repeat(once, Schedule.spaced(driving.options.reconcileInterval).pipe(Schedule.jittered)))
})
