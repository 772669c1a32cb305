/**
 * Where the runner has a prompt: running (position 0) or waiting at position n. `observe` brings
 * a tracked workflow there (queued, running, or its queue number); `refreshPositions` reads the
 * runner's queue once per burst of queue changes, at most every `queueRefreshInterval`, and
 * finishes prompts that left it and stay gone at the next read (the runner wrote their history
 * first). It reads no store.
 */
import type * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as HashSet from "effect/HashSet"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import { RunnerGateway } from "../ports/RunnerGateway.js"
import type { WorkflowHead } from "../domain/Workflow.js"
import { WorkflowTransition as T } from "../domain/WorkflowStatus.js"
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

/**
 * Waits for queue changes and reads the runner's queue, forever. A prompt this driver has on the
 * runner that is in neither list has finished, and its end is recorded from the history only when
 * a second read, one interval later, still misses it: a prompt posted over the driver's socket is
 * finished by the socket's `executing {node: null}` (Track.ts, without reading the history) in
 * that time, and the queue catches the rest (posted under another client id, or a socket that
 * missed it). On PostgreSQL the first read came before the socket's end in 83 % of the workflows
 * of a burn-down (B2), each a `/history` call (docs/decisions.md, "A prompt that left the queue").
 */
export const refreshPositions = Effect.flatMap(Ref.make(HashSet.empty<string>()), (missing) =>
  Effect.gen(function*() {
    const driving = yield* Driving
    const gateway = yield* RunnerGateway
    yield* Queue.take(driving.queueChanged)
    const onRunner = (yield* driving.inFlight.all).filter((t) => t.phase === "onRunner")
    const target = yield* driving.target
    if (onRunner.length > 0 && Option.isSome(target)) {
      const snapshot = yield* gateway.queue(target.value)
      const gone: Array<string> = []
      for (const t of onRunner) {
        const id = t.workflow.id
        if (snapshot.running.includes(id)) yield* observe(id, 0)
        else if (snapshot.pending.includes(id)) yield* observe(id, snapshot.pending.indexOf(id) + 1)
        else if (t.workflow.status !== "uploaded") gone.push(id)
      }
      const seenGone = yield* Ref.getAndSet(missing, HashSet.fromIterable(gone))
      for (const id of gone) {
        if (HashSet.has(seenGone, id)) yield* driving.fork("could not record the end of a prompt", finish(id))
      }
      // Missed once: look again after the interval, changes or not.
      if (gone.some((id) => !HashSet.has(seenGone, id))) yield* Queue.offer(driving.queueChanged, undefined)
    } else {
      yield* Ref.set(missing, HashSet.empty())
    }
    yield* Effect.sleep(driving.options.queueRefreshInterval)
  }).pipe(
    Effect.catch((e) => Effect.logWarning("could not refresh queue positions", { error: e.message })),
    Effect.forever
  ))
