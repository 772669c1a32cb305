/**
 * Where the runner has a prompt: running (position 0) or waiting at position n. `observe` brings
 * a tracked workflow there (queued, running, or its queue number); `refreshPositions` reads the
 * runner's queue once per burst of queue changes, at most every `queueRefreshInterval`, and
 * finishes prompts that left it (the runner wrote their history first). It reads no store.
 */
import type * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import { RunnerGateway } from "../runners/RunnerGateway.js"
import type { WorkflowHead } from "../workflows/Workflow.js"
import { WorkflowTransition as T } from "../workflows/WorkflowStatus.js"
import { advance, type Steps } from "./Advance.js"
import { Driving } from "./Driving.js"
import { finish } from "./Finish.js"

/** The moves that bring `w` to `position` on the runner (0: running), if any are due. */
export const stepsTo = (w: WorkflowHead, position: number, startedAt?: DateTime.Utc): Steps | undefined => {
  const queued = T.Queued({ prompt_id: w.id, queue_number: position })
  const started = T.Started({ at: startedAt })
  if (position === 0) {
    if (w.status === "accepted") return [T.Uploaded(), queued, started]
    if (w.status === "uploaded") return [queued, started]
    if (w.status === "queued") return [started]
    return undefined
  }
  if (w.status === "accepted") return [T.Uploaded(), queued]
  if (w.status === "uploaded") return [queued]
  if (w.status === "queued" && w.queue_number !== position) return [T.QueueMoved({ queue_number: position })]
  return undefined
}

/** Brings a tracked workflow to `position` on the runner (0: running). */
export const observe = (id: string, position: number, startedAt?: DateTime.Utc) =>
  Effect.asVoid(advance(id, (w) => stepsTo(w, position, startedAt)))

/** Waits for queue changes and reads the runner's queue, forever. */
export const refreshPositions =
  Effect.gen(function*() {
    const driving = yield* Driving
    const gateway = yield* RunnerGateway
    yield* Queue.take(driving.queueChanged)
    const onRunner = (yield* driving.inFlight.all).filter((t) => t.phase === "onRunner")
    const target = yield* driving.target
    if (onRunner.length > 0 && Option.isSome(target)) {
      const snapshot = yield* gateway.queue(target.value)
      for (const t of onRunner) {
        const id = t.workflow.id
        if (snapshot.running.includes(id)) yield* observe(id, 0)
        else if (snapshot.pending.includes(id)) yield* observe(id, snapshot.pending.indexOf(id) + 1)
        // Left the queue: finished (a prompt submitted under another client id sends this driver no events).
        else if (t.workflow.status !== "uploaded") yield* driving.fork("could not record the end of a prompt", finish(id))
      }
    }
    yield* Effect.sleep(driving.options.queueRefreshInterval)
  }).pipe(
    Effect.catchAll((e) => Effect.logWarning("could not refresh queue positions", { error: e.message })),
    Effect.forever
  )
