/**
 * Following the runner's WebSocket: events, in order, become what they mean for the workflows
 * this driver tracks. `execution_start` -> running; `executing` / `progress` -> events on the
 * workflow's stream, with the prompt's overall percent (Progress.ts, also fed by
 * `execution_cached`, `progress_state` and `executed`); `executing {node: null}` (the runner wrote
 * the history) -> its end is recorded beside the stream, so a slow output copy never holds up the
 * next prompt's events; from what the socket showed of the run when it showed all of it
 * (SeenRun.ts), else from the history. A (re)connection asks for reconciliation and a read of the
 * runner's capabilities, a queue change for fresh queue positions. Events of prompts this driver
 * does not track (another client's, or finished) are ignored.
 *
 * Events are taken as they have piled up (the chunks of the gateway's queue), never waited for,
 * and worked out in one pure pass per chunk (EventPass.ts): the run events of one workflow in a
 * chunk are written together, and with the end when the chunk carries it. So a fast prompt costs
 * one write for its whole run, and a slow one a write per event, as soon as it happens.
 */
import type * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import { RunnerCapabilities } from "../usecases/RunnerCapabilities.js"
import { runnersConnected } from "../usecases/Metrics.js"
import type { RunnerTarget } from "../domain/Runner.js"
import { type RunnerEvent, RunnerGateway } from "../ports/RunnerGateway.js"
import { WorkflowEventBus } from "../ports/WorkflowEvents.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"
import { Driving } from "./Driving.js"
import { eventPass } from "./EventPass.js"
import { finish } from "./Finish.js"
import type { Tracked } from "./InFlight.js"
import { afterAnswer } from "./PostAnswer.js"
import { observe } from "./QueuePositions.js"

/** Events that move a prompt's progress: its graph must be known to follow them. */
const PROGRESS = new Set<RunnerEvent["_tag"]>(["ExecutionStart", "Executing", "Progress", "ExecutionCached", "ProgressState", "Executed"])

/**
 * The graphs of tracked prompts in `events` whose node ids were not noted at their claim (an
 * inherited prompt): read once from the store. One that cannot be read is left out (its progress
 * is not followed in this batch).
 */
const inheritedGraphs = (events: ReadonlyArray<RunnerEvent>, tracked: HashMap.HashMap<string, Tracked>) =>
  Effect.gen(function*() {
    const graphs = new Map<string, ReadonlyArray<string>>()
    for (const event of events) {
      if (!PROGRESS.has(event._tag) || !("prompt_id" in event) || event.prompt_id === null || graphs.has(event.prompt_id)) continue
      const t = HashMap.get(tracked, event.prompt_id)
      if (Option.isNone(t) || t.value.nodes !== undefined || t.value.progress !== undefined) continue
      const w = yield* Effect.flatMap(WorkflowRepository, (repo) => repo.findById(event.prompt_id!)).pipe(
        Effect.tapError((e) => Effect.logWarning("could not follow a prompt's progress", { workflow_id: event.prompt_id, error: e.message })),
        Effect.option
      )
      if (Option.isSome(w)) graphs.set(event.prompt_id, Option.match(w.value, { onNone: () => [], onSome: (x) => Object.keys(x.workflow_json) }))
    }
    return graphs
  })

/** `execution_start`: running, after the submission of the same prompt (if any) has recorded it. */
const started = (id: string, at: DateTime.Utc) =>
  Effect.gen(function*() {
    const { inFlight } = yield* Driving
    const submission = yield* inFlight.noteStart(id, at)
    // Bounded by one attempt of the submission: a failed attempt or the end of the submission completes it.
    if (Option.isSome(submission)) yield* Deferred.await(submission.value)
    yield* observe(id, 0, at)
  })

/** What a chunk of runner events does: one pass (EventPass.ts), then its effects in order. */
export const handleEvents = (events: ReadonlyArray<RunnerEvent>) =>
  Effect.gen(function*() {
    const driving = yield* Driving
    const bus = yield* WorkflowEventBus
    // One event's failure is logged and does not lose the rest of the chunk.
    const logged = (what: string) => (e: { readonly message: string }) =>
      Effect.logWarning(what, { runner_id: driving.ref.id, error: e.message })
    const tracked = yield* driving.inFlight.snapshot
    const graphs = yield* inheritedGraphs(events, tracked)
    const pass = eventPass(events, tracked, (t) => t.nodes ?? graphs.get(t.workflow.id))
    yield* driving.inFlight.follow(pass.followed)
    for (const step of pass.steps) {
      switch (step._tag) {
        case "Connected": {
          yield* Deferred.succeed(driving.socketOpen, undefined)
          yield* Queue.offer(driving.reconcileNow, undefined)
          // A (re)connection may be a restarted ComfyUI with other nodes or models.
          // Optional: a dispatcher composed without the use cases reads no capabilities.
          const capabilities = yield* Effect.serviceOption(RunnerCapabilities)
          if (Option.isSome(capabilities)) {
            yield* driving.fork("could not read the runner's capabilities", Effect.flatMap(driving.target, Option.match({
              onNone: () => Effect.void,
              onSome: capabilities.value.reconnected
            })))
          }
          break
        }
        case "Disconnected":
          // The socket did not open (or closed): nothing to wait for before posting.
          yield* Deferred.succeed(driving.socketOpen, undefined)
          break
        case "QueueChanged":
          yield* Queue.offer(driving.queueChanged, undefined)
          break
        case "Started":
          yield* started(step.id, step.at === null ? yield* DateTime.now : DateTime.makeUnsafe(step.at)).pipe(
            Effect.catch(logged("could not record the start of a prompt"))
          )
          break
        case "Done": {
          // Run events just before an end (a last progress step) go out now when the workflow is
          // running: riding on the end's write, they waited for it, and the ends of many prompts
          // finishing together queue behind one another (B6's tail). Before `running` is written
          // they stay with the end, whose write puts them after it.
          const before = HashMap.get(tracked, step.id)
          const publishNow = step.leading.length > 0 && Option.isSome(before) && before.value.workflow.status === "running"
          if (publishNow) yield* bus.publish(step.id, step.leading).pipe(Effect.catch(logged("could not publish run events")))
          yield* driving.previews.end(step.id)
          // While it is being submitted, after the runner's answer to the post (PostAnswer.ts).
          yield* driving.fork(
            "could not record the end of a prompt",
            afterAnswer(step.id, finish(step.id, ["onRunner", "submitting"], publishNow ? [] : step.leading, step.seen))
          )
          break
        }
      }
    }
    for (const [id, run] of pass.publish) yield* bus.publish(id, run).pipe(Effect.catch(logged("could not publish run events")))
    for (const preview of pass.previews.values()) yield* driving.previews.offer(preview)
  })

/** Events handled at most this many at a time. */
const TAKE_BATCH = 256

/**
 * `wes_runners_connected`: +1 while this driver's socket is open (set synchronously, with the
 * context of the driver's tracking fiber: its metric registry).
 */
const connectionGauge = (kind: string, context: Context.Context<never>) => {
  const gauge = Metric.gauge(runnersConnected.id, { description: runnersConnected.description, attributes: { runner_kind: kind } })
  let connected = false
  return (up: boolean) => {
    if (up === connected) return
    connected = up
    gauge.modifyUnsafe(up ? 1 : -1, context)
  }
}

/** Follows the runner's events until the driver stops (the gateway reconnects by itself). */
export const track = (target: RunnerTarget) =>
  Effect.scoped(Effect.gen(function*() {
    const driving = yield* Driving
    const events = yield* (yield* RunnerGateway).events(target, driving.lease.clientId)
    const connected = connectionGauge(target.kind, yield* Effect.context<never>())
    yield* Effect.addFinalizer(() => Effect.sync(() => connected(false)))
    // A batch is what the socket delivered while the previous one was being handled: at least
    // one event (waits for it), at most TAKE_BATCH, never waiting for more than are there.
    return yield* Effect.forever(Effect.flatMap(Queue.takeBetween(events, 1, TAKE_BATCH), (batch) => {
      for (const e of batch) {
        if (e._tag === "Connected") connected(true)
        else if (e._tag === "Disconnected") connected(false)
      }
      return handleEvents(batch)
    }))
  }))
