/**
 * Issue 34, item 3: an agent runner places a workflow's declared model files before its prompt is
 * posted, with `provisioning` events (throttled) on the way; a file that cannot be placed fails
 * the workflow naming it, and nothing is posted. A direct runner is left alone. The agents are a
 * test `RunnerAgents` that fails on any call a test did not arrange (`Layer.mock`).
 */
import { describe, expect, it } from "@effect/vitest"
import {
  AccountRepository,
  BlobStore,
  type ModelFile,
  type NewWorkflowEvent,
  ProvisionFailed,
  type ProvisionProgress,
  RunnerAgents,
  RunnerGateway,
  type RunnerTarget,
  RunnerUnreachable,
  type SubmitPrompt,
  TierPolicy,
  WorkflowEventBus,
  WorkflowRepository
} from "@wes/core"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/testing/TestClock"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { IdGenerator } from "../../src/domain/Ids.js"
import { Driving } from "../../src/dispatch/Driving.js"
import { submit } from "../../src/dispatch/Submit.js"
import { Scheduler } from "../../src/usecases/Scheduler.js"
import { drivingLayer, FakeWorkflows, headOf, runner, workflowOn } from "./harness.js"

const agentRunner: RunnerTarget = { ...runner, connection: "agent" }

const checkpoint: ModelFile = { url: "https://models.test/sdxl.safetensors", sha256: "a".repeat(64), folder: "checkpoints", filename: "sdxl.safetensors" }
const lora: ModelFile = { url: "https://models.test/detail.safetensors", sha256: "b".repeat(64), folder: "loras", filename: "detail.safetensors" }

/** What happened, in order: the agent's calls, the events published, the posts. */
type Step = string

const layerFor = (
  store: FakeWorkflows,
  target: RunnerTarget,
  steps: Array<Step>,
  agents: Partial<RunnerAgents["Service"]> | undefined,
  gateway: Partial<RunnerGateway["Service"]> = {
    submit: (_: unknown, p: SubmitPrompt) => Effect.sync(() => steps.push(`post ${p.prompt_id}`)).pipe(Effect.as({ prompt_id: p.prompt_id, number: 1 }))
  }
) =>
  Layer.mergeAll(
    Layer.mock(WorkflowRepository, { transition: store.transition, findById: (id) => Effect.succeed(Option.fromNullishOr(store.byId.get(id))) }),
    Layer.mock(RunnerGateway, gateway),
    Layer.mock(BlobStore, {}),
    Layer.mock(WorkflowEventBus, {
      publish: (_, events: ReadonlyArray<NewWorkflowEvent>) =>
        Effect.sync(() => events.forEach((e) => steps.push(`${e.type} ${JSON.stringify(e.data)}`))).pipe(Effect.as([]))
    }),
    Layer.mock(IdGenerator, {}),
    Layer.mock(AccountRepository, {}),
    TierPolicy.layer({}),
    agents === undefined ? Layer.empty : Layer.mock(RunnerAgents, { connected: () => true, ...agents })
  ).pipe(
    Layer.provideMerge(drivingLayer()),
    Layer.provideMerge(Layer.mock(Scheduler, { resolve: () => Effect.succeed(Option.some(target)) }))
  )

const claimedNow = (w: ReturnType<typeof workflowOn>) =>
  Effect.flatMap(Driving, ({ inFlight }) => inFlight.submitting(headOf(w), Object.keys(w.workflow_json)))

const progress = (p: ProvisionProgress) => p

describe("Provisioning before the post", () => {
  it.effect("places the model files on an agent runner, publishing throttled progress, then posts", () => {
    const w = workflowOn({ models: [checkpoint, lora] })
    const store = new FakeWorkflows([w])
    const steps: Array<Step> = []
    return Effect.gen(function*() {
      yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: false })
      expect(steps).toEqual([
        "provision checkpoints/sdxl.safetensors loras/detail.safetensors",
        // The first progress goes out; the next two, within the same half second, are held and replaced.
        `provisioning ${JSON.stringify({ folder: "checkpoints", filename: "sdxl.safetensors", bytes: 10, total: 100, percent: 10 })}`,
        // A file's last progress always goes out.
        `provisioning ${JSON.stringify({ folder: "checkpoints", filename: "sdxl.safetensors", bytes: 100, total: 100, percent: 100 })}`,
        // Held (no total known, within the window), then published as the last once provisioning ended.
        `provisioning ${JSON.stringify({ folder: "loras", filename: "detail.safetensors", bytes: 50, total: null, percent: null })}`,
        `post ${w.id}`
      ])
      expect(store.byId.get(w.id)).toMatchObject({ status: "queued" })
    }).pipe(Effect.provide(layerFor(store, agentRunner, steps, {
      provision: (runnerId, models, onProgress) =>
        Effect.gen(function*() {
          expect(runnerId).toBe(agentRunner.id)
          steps.push(`provision ${models.map((m) => `${m.folder}/${m.filename}`).join(" ")}`)
          for (const bytes of [10, 20, 30, 100]) yield* onProgress(progress({ folder: "checkpoints", filename: "sdxl.safetensors", bytes, total: 100 }))
          for (const bytes of [5, 50]) yield* onProgress(progress({ folder: "loras", filename: "detail.safetensors", bytes, total: null }))
        })
    })))
  })

  it.effect("fails the workflow naming the file when it cannot be placed, and posts nothing", () => {
    const w = workflowOn({ models: [checkpoint, lora] })
    const store = new FakeWorkflows([w])
    const steps: Array<Step> = []
    return Effect.gen(function*() {
      yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: false })
      expect(steps.filter((s) => s.startsWith("post"))).toEqual([])
      expect(store.byId.get(w.id)).toMatchObject({
        status: "failed",
        exception_type: "ModelProvisioningFailed",
        exception_message: "Model file loras/detail.safetensors could not be placed on the runner: sha256 mismatch (got " + "c".repeat(64) + ")"
      })
      const tracked = yield* Effect.flatMap(Driving, (d) => d.inFlight.get(w.id))
      expect(Option.isNone(tracked)).toBe(true)
    }).pipe(Effect.provide(layerFor(store, agentRunner, steps, {
      provision: (runnerId) =>
        Effect.fail(new ProvisionFailed({ runner_id: runnerId, filename: "detail.safetensors", message: `sha256 mismatch (got ${"c".repeat(64)})` }))
    }, {})))
  })

  it.effect("does not post a workflow its owner cancelled while its files were being placed", () => {
    const w = workflowOn({ models: [checkpoint] })
    const store = new FakeWorkflows([w])
    return Effect.gen(function*() {
      yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: false })
      expect(store.byId.get(w.id)?.status).toBe("cancelled")
      expect(Option.isNone(yield* Effect.flatMap(Driving, (d) => d.inFlight.get(w.id)))).toBe(true)
    }).pipe(Effect.provide(layerFor(store, agentRunner, [], {
      provision: () => Effect.sync(() => void store.byId.set(w.id, { ...store.byId.get(w.id)!, status: "cancelled" }))
    }, {})))
  })

  it.effect("an agent runner without the agent service fails the workflow clearly, posting nothing", () => {
    const w = workflowOn({ models: [checkpoint] })
    const store = new FakeWorkflows([w])
    return Effect.gen(function*() {
      yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: false })
      expect(store.byId.get(w.id)).toMatchObject({ status: "failed", exception_type: "ModelProvisioningFailed" })
      expect(store.byId.get(w.id)?.exception_message).toContain("wes-agent")
    }).pipe(Effect.provide(layerFor(store, agentRunner, [], undefined, {})))
  })

  it.effect("a direct runner is left alone: no provisioning (ComfyUI names a missing model itself), the prompt is posted", () => {
    const w = workflowOn({ models: [checkpoint] })
    const store = new FakeWorkflows([w])
    const steps: Array<Step> = []
    return Effect.gen(function*() {
      yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: false })
      expect(steps).toEqual([`post ${w.id}`])
    }).pipe(Effect.provide(layerFor(store, runner, steps, {})))
  })

  it.effect("an agent that does not answer is retried like any runner call, then the workflow is posted once", () => {
    const w = workflowOn({ models: [checkpoint] })
    const store = new FakeWorkflows([w])
    const steps: Array<Step> = []
    let calls = 0
    return Effect.gen(function*() {
      yield* claimedNow(w)
      const fiber = yield* Effect.forkChild(submit({ workflow: w, resubmit: false }))
      for (let i = 0; i < 20 && calls < 2; i++) yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
      expect(calls).toBe(2)
      expect(steps).toEqual([`post ${w.id}`])
    }).pipe(Effect.provide(layerFor(store, agentRunner, steps, {
      provision: (runnerId) =>
        Effect.suspend(() => ++calls === 1 ? Effect.fail(new RunnerUnreachable({ runner_id: runnerId, message: "the agent is not connected" })) : Effect.void)
    }, {
      // A retry asks the runner first whether an earlier attempt posted it.
      status: () => Effect.succeed({ _tag: "Unknown" as const }),
      submit: (_: unknown, p: SubmitPrompt) => Effect.sync(() => steps.push(`post ${p.prompt_id}`)).pipe(Effect.as({ prompt_id: p.prompt_id, number: 1 }))
    })))
  })
})
