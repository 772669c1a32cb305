/**
 * Following the runner's WebSocket: events, in order, become what they mean for the workflows
 * this driver tracks. `execution_start` -> running; `executing` / `progress` -> events on the
 * workflow's stream, with the prompt's overall percent (Progress.ts, also fed by
 * `execution_cached`, `progress_state` and `executed`); `executing {node: null}` (the runner wrote the history) -> its end is
 * recorded beside the stream, so a slow output copy never holds up the next prompt's events. A
 * (re)connection asks for reconciliation and a read of the runner's capabilities, a queue change
 * for fresh queue positions. Events of
 * prompts this driver does not track (another client's, or finished) are ignored.
 *
 * Events are taken as they have piled up (the chunks of the gateway's stream), never waited for: the run
 * events of one workflow in a chunk are written together, and with the end when the chunk
 * carries it. So a fast prompt costs one write for its whole run, and a slow one a write per
 * event, as soon as it happens.
 */
import * as Chunk from "effect/Chunk"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import { RunnerCapabilities } from "../capabilities/RunnerCapabilities.js"
import { runnersConnected } from "../observability/Metrics.js"
import type { RunnerTarget } from "../runners/Runner.js"
import { type RunnerEvent, RunnerGateway } from "../runners/RunnerGateway.js"
import { type NewWorkflowEvent, WorkflowEventBus } from "../workflows/WorkflowEvents.js"
import { WorkflowRepository } from "../workflows/WorkflowRepository.js"
import { Driving } from "./Driving.js"
import { finish } from "./Finish.js"
import { advanceProgress, progressPercent, startProgress } from "./Progress.js"
import { observe } from "./QueuePositions.js"

/** The node ids of a tracked workflow's graph: noted when it was claimed, else read once (an inherited prompt). */
const graphOf = (id: string) =>
  Effect.gen(function*() {
    const { inFlight } = yield* Driving
    const tracked = yield* inFlight.get(id)
    if (Option.isSome(tracked) && tracked.value.nodes !== undefined) return tracked.value.nodes
    const w = yield* Effect.flatMap(WorkflowRepository, (repo) => repo.findById(id))
    return Option.match(w, { onNone: () => [], onSome: (x) => Object.keys(x.workflow_json) })
  })

/** Advances a tracked prompt's overall progress by `event`; its percent. */
const progressed = (id: string, event: RunnerEvent) =>
  Effect.gen(function*() {
    const { inFlight } = yield* Driving
    const tracked = yield* inFlight.get(id)
    const current = Option.flatMap(tracked, (t) => Option.fromNullable(t.progress))
    const next = advanceProgress(Option.isSome(current) ? current.value : startProgress(yield* graphOf(id)), event)
    yield* inFlight.update(id, (t) => ({ ...t, progress: next }))
    return progressPercent(next)
  })

/** `execution_start`: running, after the submission of the same prompt (if any) has recorded it. */
const started = (id: string, at: DateTime.Utc | undefined) =>
  Effect.gen(function*() {
    const { inFlight } = yield* Driving
    if (Option.isNone(yield* inFlight.get(id))) return
    const progress = startProgress(yield* graphOf(id))
    yield* inFlight.update(id, (t) => ({ ...t, progress }))
    const submission = yield* inFlight.noteStart(id, at ?? (yield* DateTime.now))
    // Bounded by one attempt of the submission: a failed attempt or the end of the submission completes it.
    if (Option.isSome(submission)) yield* Deferred.await(submission.value)
    yield* observe(id, 0, at)
  })

/** What a chunk of runner events does. */
export const handleEvents = (events: ReadonlyArray<RunnerEvent>) =>
  Effect.gen(function*() {
    const driving = yield* Driving
    const bus = yield* WorkflowEventBus
    // Optional: a dispatcher composed without the use cases reads no capabilities.
    const capabilities = yield* Effect.serviceOption(RunnerCapabilities)
    // One event's failure is logged and does not lose the rest of the chunk.
    const logged = (what: string) => (e: { readonly message: string }) =>
      Effect.logWarning(what, { runner_id: driving.ref.id, error: e.message })
    /** Run events not written yet, per workflow, in order. */
    const pending = new Map<string, Array<NewWorkflowEvent>>()
    const tracked = (id: string | null): Effect.Effect<boolean> =>
      id === null ? Effect.succeed(false) : Effect.map(driving.inFlight.get(id), Option.isSome)
    /** A run event of a tracked prompt, with its overall percent, to write with the chunk. */
    const note = (id: string | null, event: RunnerEvent, data: (percent: number) => NewWorkflowEvent) =>
      Effect.gen(function*() {
        if (id === null || !(yield* tracked(id))) return
        const written = data(yield* progressed(id, event))
        const list = pending.get(id)
        if (list === undefined) pending.set(id, [written])
        else list.push(written)
      })
    for (const event of events) {
      switch (event._tag) {
        case "Connected":
          yield* Deferred.succeed(driving.socketOpen, undefined)
          yield* Queue.offer(driving.reconcileNow, undefined)
          // A (re)connection may be a restarted ComfyUI with other nodes or models.
          if (Option.isSome(capabilities)) {
            yield* driving.fork("could not read the runner's capabilities", Effect.flatMap(driving.target, Option.match({
              onNone: () => Effect.void,
              onSome: capabilities.value.reconnected
            })))
          }
          break
        case "Disconnected":
          // The socket did not open (or closed): nothing to wait for before posting.
          yield* Deferred.succeed(driving.socketOpen, undefined)
          break
        case "QueueChanged":
          yield* Queue.offer(driving.queueChanged, undefined)
          break
        case "ExecutionStart":
          yield* started(event.prompt_id, event.timestamp === null ? undefined : DateTime.unsafeMake(event.timestamp)).pipe(
            Effect.catchAll(logged("could not record the start of a prompt"))
          )
          break
        case "Executing":
          yield* note(event.prompt_id, event, (percent) => ({ type: "executing", data: { node: event.node, percent } }))
            .pipe(Effect.catchAll(logged("could not follow a prompt's progress")))
          break
        case "Progress":
          yield* note(event.prompt_id, event, (percent) => ({
            type: "progress",
            data: { node: event.node, value: event.value, max: event.max, percent }
          })).pipe(Effect.catchAll(logged("could not follow a prompt's progress")))
          break
        case "ExecutionCached":
        case "ProgressState":
        case "Executed":
          // They only move the percent that the next executing / progress event carries.
          if (yield* tracked(event.prompt_id)) {
            yield* Effect.asVoid(progressed(event.prompt_id, event)).pipe(Effect.catchAll(logged("could not follow a prompt's progress")))
          }
          break
        case "PromptDone": {
          const leading = pending.get(event.prompt_id) ?? []
          pending.delete(event.prompt_id)
          yield* driving.fork("could not record the end of a prompt", finish(event.prompt_id, ["onRunner", "submitting"], leading))
          break
        }
        default:
          // Success, error and interruption are read from the history when `PromptDone` says it is written.
          break
      }
    }
    for (const [id, run] of pending) yield* bus.publish(id, run).pipe(Effect.catchAll(logged("could not publish run events")))
  })

/** Events handled at most this many at a time. */
const TAKE_BATCH = 256

/** `wes_runners_connected`: +1 while this driver's socket is open. */
const connectionGauge = (kind: string) => {
  const label = [MetricLabel.make("runner_kind", kind)]
  let connected = false
  return (up: boolean) => {
    if (up === connected) return
    connected = up
    runnersConnected.unsafeModify(up ? 1 : -1, label)
  }
}

/** Follows the runner's events until the driver stops (the gateway reconnects by itself). */
export const track = (target: RunnerTarget) =>
  Effect.scoped(Effect.gen(function*() {
    const driving = yield* Driving
    const events = yield* (yield* RunnerGateway).events(target, driving.lease.clientId)
    const connected = connectionGauge(target.kind)
    yield* Effect.addFinalizer(() => Effect.sync(() => connected(false)))
    // A batch is what the socket delivered while the previous one was being handled.
    return yield* Effect.forever(Effect.flatMap(Queue.takeBetween(events, 1, TAKE_BATCH), (chunk) => {
      const batch = Chunk.toReadonlyArray(chunk)
      for (const e of batch) {
        if (e._tag === "Connected") connected(true)
        else if (e._tag === "Disconnected") connected(false)
      }
      return handleEvents(batch)
    }))
  }))
