/**
 * Issue 34, item 4: once a run's end is recorded (after its outputs are stored in WES), an agent
 * runner's agent is asked to delete the run's files (the outputs its history lists, the inputs
 * WES uploaded); beside the driver, so the end never waits for it or fails with it. A direct
 * runner is never asked (its `RunnerAgents` fails on any call).
 */
import { describe, expect, it } from "@effect/vitest"
import {
  BlobStore,
  type PromptHistory,
  RunnerAgents,
  type RunFiles,
  RunnerGateway,
  type RunnerTarget,
  RunnerUnreachable,
  WorkflowEventBus,
  WorkflowRepository
} from "@wes/core"
import { Fixtures } from "@wes/core/testing"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { IdGenerator } from "../../src/domain/Ids.js"
import { Driving } from "../../src/dispatch/Driving.js"
import { finish } from "../../src/dispatch/Finish.js"
import { Scheduler } from "../../src/usecases/Scheduler.js"
import { drivingLayer, FakeWorkflows, headOf, retryLayer, runner, settle, workflowOn } from "./harness.js"

const agentRunner: RunnerTarget = { ...runner, connection: "agent" }
const image = { node_id: "9", filename: "out_00001_.png", subfolder: "", type: "output" }
const preview = { node_id: "4", filename: "ComfyUI_temp_abcd_00001_.png", subfolder: "", type: "temp" }

const history = (over: Partial<PromptHistory>): PromptHistory => ({
  outcome: "success",
  outputs: [],
  started_at: 1_000,
  completed_at: 2_000,
  error: null,
  ...over
})

const layerFor = (store: FakeWorkflows, target: RunnerTarget, ended: PromptHistory, agents: Partial<RunnerAgents["Service"]>) =>
  Layer.mergeAll(
    Layer.mock(WorkflowRepository, { transition: store.transition, findById: (id) => Effect.succeed(Option.fromNullishOr(store.byId.get(id))) }),
    Layer.mock(RunnerGateway, {
      history: () => Effect.succeed(Option.some(ended)),
      download: () => Effect.succeed({ content_type: "image/png", content: [new Uint8Array([1, 2, 3])] })
    }),
    Layer.mock(BlobStore, { put: () => Effect.succeed(3), delete: () => Effect.void }),
    Layer.mock(WorkflowEventBus, {}),
    Layer.mock(IdGenerator, { next: Effect.sync(() => Fixtures.uuid()) }),
    retryLayer(),
    Layer.mock(RunnerAgents, { connected: () => true, ...agents })
  ).pipe(
    Layer.provideMerge(drivingLayer()),
    Layer.provideMerge(Layer.mock(Scheduler, { resolve: () => Effect.succeed(Option.some(target)) }))
  )

const onRunner = (w: ReturnType<typeof workflowOn>) =>
  Effect.flatMap(Driving, ({ inFlight }) => inFlight.put({ workflow: headOf(w), phase: "onRunner" }))

describe("Cleanup after the end", () => {
  it.effect("asks an agent runner to delete a completed run's outputs and uploaded inputs, once the outputs are stored", () => {
    const w = workflowOn({ status: "running", workflow_params: [["$file(photo)", "inputs/wf/photo/cat.png"], ["$text(color)", "7"]] })
    const store = new FakeWorkflows([w])
    return Effect.gen(function*() {
      const cleaned = yield* Deferred.make<{ readonly runnerId: string; readonly files: RunFiles; readonly status: string | undefined }>()
      yield* onRunner(w)
      yield* finish(w.id).pipe(Effect.provide(Layer.mock(RunnerAgents, {
      connected: () => true,
        cleanup: (runnerId, files) => Deferred.succeed(cleaned, { runnerId, files, status: store.status(w.id) }).pipe(Effect.asVoid)
      })))
      const call = yield* Deferred.await(cleaned)
      expect(call).toEqual({
        runnerId: agentRunner.id,
        files: { prompt_id: w.id, outputs: [image, preview], inputs: [{ name: `${w.id}_cat.png`, subfolder: "wes", type: "input" }] },
        // Asked after the completion (with its outputs) was written.
        status: "completed"
      })
      expect(store.requests[0]!.outputs!.map((o) => o.filename)).toEqual(["out_00001_.png", "ComfyUI_temp_abcd_00001_.png"])
    }).pipe(Effect.provide(layerFor(store, agentRunner, history({ outputs: [image, preview] }), {})))
  })

  it.effect("cleans up after a failed run too, and a cleanup that fails does not change the recorded end", () => {
    const w = workflowOn({ status: "running" })
    const store = new FakeWorkflows([w])
    return Effect.gen(function*() {
      const asked = yield* Deferred.make<RunFiles>()
      yield* onRunner(w)
      yield* finish(w.id).pipe(Effect.provide(Layer.mock(RunnerAgents, {
      connected: () => true,
        cleanup: (runnerId, files) =>
          Effect.andThen(Deferred.succeed(asked, files), Effect.fail(new RunnerUnreachable({ runner_id: runnerId, message: "the agent went away" })))
      })))
      expect((yield* Deferred.await(asked)).prompt_id).toBe(w.id)
      yield* settle
      expect(store.byId.get(w.id)).toMatchObject({ status: "failed", exception_type: "OOM" })
      expect(Option.isNone(yield* Effect.flatMap(Driving, (d) => d.inFlight.get(w.id)))).toBe(true)
    }).pipe(Effect.provide(layerFor(store, agentRunner, history({
      outcome: "error",
      error: { node_id: "3", exception_type: "OOM", exception_message: "out of memory" }
    }), {})))
  })

  it.effect("never asks a direct runner (WES cannot delete its files)", () => {
    const w = workflowOn({ status: "running" })
    const store = new FakeWorkflows([w])
    let asked = 0
    return Effect.gen(function*() {
      yield* onRunner(w)
      yield* finish(w.id)
      yield* settle
      expect(store.byId.get(w.id)).toMatchObject({ status: "completed" })
      expect(asked).toBe(0)
    }).pipe(Effect.provide(layerFor(store, runner, history({ outputs: [image] }), { cleanup: () => Effect.sync(() => void asked++) })))
  })
})
