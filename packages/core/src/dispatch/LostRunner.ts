/**
 * A runner that stays unreachable (issue 32). Reconciliation reads the runner's `/queue` every
 * `reconcileInterval`: the first read that fails starts the clock, any read that succeeds stops
 * it. Once the runner has not answered for `runnerLostAfter`, the workflows queued or running on
 * it are given up: `failed` with `RunnerLost`, or retried on another eligible runner where
 * Retry.ts allows (never on this one again). Workflows not posted yet are the submission's
 * (retried, then moved away: MoveAway.ts). The driver then stays up for one more
 * `runnerLostAfter`: should the runner answer meanwhile, reconciliation removes from it the
 * prompts of workflows that are no longer its own (Reconcile.ts), so what was given up does not
 * run there as well.
 *
 * The clock is the driver's own, in memory: one instance drives a runner at a time, and a new
 * driver (after a takeover, or a restart of WES) starts its own, so a runner is given up late,
 * never early (docs/decisions.md).
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import type { RunnerError } from "../ports/RunnerGateway.js"
import { advance } from "./Advance.js"
import { Driving } from "./Driving.js"
import { failOrRetry } from "./Retry.js"

/** What a driver knows of its runner's reachability (epoch milliseconds). */
export interface Reach {
  /** When a read of the runner first failed since it last answered. */
  readonly unreachableSince: number | undefined
  /** Until when the driver stays up, though idle, to take back from the runner what it gave up. */
  readonly watchUntil: number | undefined
}

/** The runner answered a read: the clock stops. */
export const answered = Effect.gen(function*() {
  const { reach, ref } = yield* Driving
  const before = yield* Ref.getAndUpdate(reach, (r): Reach => ({ ...r, unreachableSince: undefined }))
  if (before.unreachableSince !== undefined) yield* Effect.logInfo("runner reachable again", { runner_id: ref.id })
})

/** The reconciliation that followed an answer is done: nothing given up is left to take back. */
export const settled = Effect.flatMap(Driving, ({ reach }) => Ref.update(reach, (r): Reach => ({ ...r, watchUntil: undefined })))

/** True while the driver waits for a runner it gave up on to answer (it does not stop as idle). */
export const watching = Effect.flatMap(Driving, ({ reach }) =>
  Effect.flatMap(Ref.get(reach), ({ watchUntil }) =>
    watchUntil === undefined ? Effect.succeed(false) : Effect.map(Clock.currentTimeMillis, (now) => now < watchUntil)))

/**
 * A read of the runner failed with `error`: starts the clock, or, once the runner has not
 * answered for `runnerLostAfter`, gives up the workflows queued or running on it.
 */
export const unanswered = (error: RunnerError) =>
  Effect.gen(function*() {
    const driving = yield* Driving
    const now = yield* Clock.currentTimeMillis
    const lostAfter = Duration.fromInputUnsafe(driving.options.runnerLostAfter)
    const before = yield* Ref.getAndUpdate(driving.reach, (r): Reach => r.unreachableSince === undefined ? { ...r, unreachableSince: now } : r)
    const since = before.unreachableSince ?? now
    const logged = { runner_id: driving.ref.id, error: error.message }
    if (before.unreachableSince === undefined) {
      yield* Effect.logWarning("runner unreachable", { ...logged, gives_up_after: Duration.format(lostAfter) })
    } else yield* Effect.logDebug("runner still unreachable", logged)
    if (now - since < Duration.toMillis(lostAfter)) return
    const onRunner = (yield* driving.inFlight.all).filter((t) =>
      t.phase === "onRunner" && (t.workflow.status === "queued" || t.workflow.status === "running"))
    if (onRunner.length === 0) return
    let retried = 0
    for (const t of onRunner) {
      const end = yield* failOrRetry(t.workflow, {
        error_node: null,
        exception_type: "RunnerLost",
        exception_message: `The runner could not be reached for ${Duration.format(lostAfter)} (${error.message})`
      })
      yield* advance(t.workflow.id, () => [end])
      if (end._tag === "Retried") retried++
      // Given up here: another runner's work now, or finished.
      yield* driving.inFlight.remove(t.workflow.id)
    }
    yield* Ref.update(driving.reach, (r): Reach => ({ ...r, watchUntil: now + Duration.toMillis(lostAfter) }))
    yield* Effect.logWarning("gave up the workflows of an unreachable runner", { ...logged, workflows: onRunner.length, retried })
  })
