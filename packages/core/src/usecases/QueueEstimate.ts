/**
 * A waiting workflow's place on its runner and an estimated start (issue 17): `queue_position`
 * counts the workflows that start before it there (for a queued one, the runner's own position:
 * what runs and what is pending ahead; for one still waiting in WES, everything on the runner plus
 * what the claim order puts ahead of it), and `estimated_start_at` is now plus that many of the
 * runner's recent average run time (RunTimes). Running or finished: nothing to estimate.
 */
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { StorageError } from "../domain/Errors.js"
import { type QueueEstimate, runnerOf, type Workflow } from "../domain/Workflow.js"
import { DispatchQueue } from "../ports/Dispatch.js"
import { orderWaiting, PriorityAging } from "../domain/Ordering.js"
import { RunTimes } from "./RunTimes.js"

/** Most waiting workflows of one runner read for a position (beyond: no position). */
export const ESTIMATE_WINDOW = 1_000

const none: QueueEstimate = { queue_position: null, estimated_start_at: null }

/** What an estimate reads: the store's queues (none: no positions) and the run times (none: no start). */
export interface EstimateSources {
  readonly queue: Option.Option<DispatchQueue["Service"]>
  readonly runTimes: Option.Option<RunTimes["Service"]>
  readonly agingMs: number
}

/** The sources in context now (at a use case's construction): each service if present, and the aging. */
export const estimateSources = Effect.gen(function*() {
  const aging = yield* PriorityAging
  return {
    queue: yield* Effect.serviceOption(DispatchQueue),
    runTimes: yield* Effect.serviceOption(RunTimes),
    agingMs: Duration.toMillis(aging)
  } satisfies EstimateSources
})

export const estimateOf = (w: Workflow, sources: EstimateSources): Effect.Effect<QueueEstimate, StorageError> =>
  Effect.gen(function*() {
    const { agingMs, queue, runTimes } = sources
    const now = yield* DateTime.now
    const runner = runnerOf(w)
    if (runner === undefined) return none
    let ahead: number | null = null
    if (w.status === "queued") ahead = w.queue_number
    else if (w.status === "accepted" || w.status === "uploaded") {
      if (Option.isNone(queue)) return none
      const { onRunner, waiting } = yield* queue.value.waitingOn(runner.id, ESTIMATE_WINDOW)
      const rank = orderWaiting(waiting, onRunner, now.epochMilliseconds, agingMs).findIndex((r) => r.workflow.id === w.id)
      if (rank >= 0) ahead = Array.from(onRunner.values()).reduce((a, b) => a + b, 0) + rank
    }
    if (ahead === null) return none
    const average = Option.isNone(runTimes) ? Option.none<number>() : yield* runTimes.value.average(runner.id)
    return {
      queue_position: ahead,
      estimated_start_at: Option.isNone(average) ? null : DateTime.add(now, { milliseconds: Math.round(ahead * average.value) })
    }
  })
