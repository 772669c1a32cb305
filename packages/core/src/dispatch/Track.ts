/**
 * Following the runner's WebSocket: each event, in order, becomes what it means for a workflow
 * this driver tracks. `execution_start` -> running; `executing` / `progress` -> events on its
 * stream; `executing {node: null}` (the runner wrote the history) -> its end is recorded beside
 * the stream, so a slow output copy never holds up the next prompt's events. A (re)connection
 * asks for reconciliation, a queue change for fresh queue positions. Events of prompts this
 * driver does not track (another client's, or already finished) are ignored.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import type { RunnerTarget } from "../runners/Runner.js"
import { type RunnerEvent, RunnerGateway } from "../runners/RunnerGateway.js"
import { type NewWorkflowEvent, WorkflowEventBus } from "../workflows/WorkflowEvents.js"
import { Driving } from "./Driving.js"
import { finish } from "./Finish.js"
import { observe } from "./QueuePositions.js"

/** Publishes an event of a tracked workflow's run. */
const publish = (id: string, event: NewWorkflowEvent) =>
  Effect.gen(function*() {
    const { inFlight } = yield* Driving
    if (Option.isNone(yield* inFlight.get(id))) return
    yield* Effect.flatMap(WorkflowEventBus, (bus) => bus.publish(id, [event]))
  })

/** What one runner event does. */
export const handleEvent = (event: RunnerEvent) =>
  Effect.gen(function*() {
    const driving = yield* Driving
    switch (event._tag) {
      case "Connected":
        return yield* Queue.offer(driving.reconcileNow, undefined)
      case "QueueChanged":
        return yield* Queue.offer(driving.queueChanged, undefined)
      case "ExecutionStart":
        return yield* observe(event.prompt_id, 0, event.timestamp === null ? undefined : DateTime.unsafeMake(event.timestamp))
      case "Executing":
        return event.prompt_id === null ? undefined : yield* publish(event.prompt_id, { type: "executing", data: { node: event.node } })
      case "Progress":
        return event.prompt_id === null
          ? undefined
          : yield* publish(event.prompt_id, { type: "progress", data: { node: event.node, value: event.value, max: event.max } })
      case "PromptDone":
        return yield* driving.fork("could not record the end of a prompt", finish(event.prompt_id, ["onRunner", "submitting"]))
      default:
        // Success, error and interruption are read from the history when `PromptDone` says it is written.
        return undefined
    }
  })

/** Follows the runner's events until the driver stops (the gateway reconnects by itself). */
export const track = (target: RunnerTarget) =>
  Effect.gen(function*() {
    const driving = yield* Driving
    const gateway = yield* RunnerGateway
    yield* gateway.events(target, driving.lease.clientId).pipe(
      Stream.runForEach((event) =>
        handleEvent(event).pipe(
          Effect.catchAll((e) => Effect.logWarning("could not handle a runner event", { runner_id: driving.ref.id, error: e.message }))
        )
      )
    )
  })
