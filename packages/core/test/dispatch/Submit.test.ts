import { describe, expect, it } from "@effect/vitest"
import { AccountRepository, TierPolicy, BlobStore, PromptRejected, PromptWithheld, RunnerGateway, RunnerUnreachable, type SubmitPrompt, WorkflowEventBus, WorkflowRepository } from "@wes/core"
import { IdGenerator } from "../../src/domain/Ids.js"
import { indexSummary } from "../../src/domain/Needs.js"
import { RunnerCapabilities } from "../../src/usecases/RunnerCapabilities.js"
import { Scheduler } from "../../src/usecases/Scheduler.js"
import { summarize } from "../../src/domain/Summary.js"
import { Fixtures } from "@wes/core/testing"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/testing/TestClock"
import { Driving, type DrivingShape } from "../../src/dispatch/Driving.js"
import { submit } from "../../src/dispatch/Submit.js"
import { handleEvents } from "../../src/dispatch/Track.js"
import { drivingLayer, FakeWorkflows, headOf, runner, schedulerFor, workflowOn } from "./harness.js"

const definition = { "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: "$text(color)" } } }

/** The services a submission uses: the store map, the gateway's arranged calls, blobs and accounts unused. */
const layerFor = (
  store: FakeWorkflows,
  gateway: Partial<RunnerGateway["Service"]>,
  over: {
    readonly blobs?: Partial<BlobStore["Service"]>
    readonly driving?: Parameters<typeof drivingLayer>[0]
    readonly scheduler?: Layer.Layer<Scheduler>
    readonly transition?: WorkflowRepository["Service"]["transition"]
  } = {}
) =>
  Layer.mergeAll(
    Layer.mock(WorkflowRepository, { transition: over.transition ?? store.transition, findById: (id) => Effect.succeed(Option.fromNullishOr(store.byId.get(id))) }),
    Layer.mock(RunnerGateway, gateway),
    Layer.mock(BlobStore, over.blobs ?? {}),
    Layer.mock(WorkflowEventBus, {}),
    Layer.mock(IdGenerator, {}),
    Layer.mock(AccountRepository, {}),
    TierPolicy.layer({})
  ).pipe(Layer.provideMerge(drivingLayer(over.driving)), Layer.provideMerge(over.scheduler ?? schedulerFor()))

/** Tracks `w` as the claim loop does before submitting it. */
const claimedNow = (w: ReturnType<typeof workflowOn>) =>
  Effect.flatMap(Driving, ({ inFlight }) => inFlight.submitting(headOf(w), Object.keys(w.workflow_json)))

describe("Submit", () => {
  it.effect("posts the substituted prompt under the workflow id and the lease's client id, and records uploaded and queued in one write", () => {
    const w = workflowOn({ workflow_json: definition, workflow_params: [["$text(color)", "7"]] })
    const store = new FakeWorkflows([w])
    const posted: Array<SubmitPrompt> = []
    const gateway = { submit: (_: unknown, p: SubmitPrompt) => Effect.sync(() => posted.push(p)).pipe(Effect.as({ prompt_id: p.prompt_id, number: 1 })) }
    return Effect.gen(function*() {
      yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: false })
      expect(posted).toEqual([{
        prompt_id: w.id,
        prompt: { "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: "7" } } },
        client_id: "wes-test-client",
        extra_data: { wes_workflow_id: w.id },
        fence: expect.any(Function)
      }])
      // The fence is the lease, asked again by the client as the request is written.
      expect(posted[0]!.fence!()).toBe(true)
      expect(store.moves).toEqual(["Uploaded+Queued"])
      expect(store.byId.get(w.id)).toMatchObject({ status: "queued", prompt_id: w.id, queue_number: 1 })
      const tracked = yield* Effect.flatMap(Driving, (d) => d.inFlight.get(w.id))
      expect(Option.map(tracked, (t) => t.phase)).toEqual(Option.some("onRunner"))
    }).pipe(Effect.provide(layerFor(store, gateway)))
  })

  it.effect("writes running with the same write when the runner started the prompt while it was being posted", () => {
    const w = workflowOn()
    const store = new FakeWorkflows([w])
    const startedAt = Fixtures.at(7)
    let driving: DrivingShape | undefined
    return Effect.gen(function*() {
      driving = yield* Driving
      yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: false })
      expect(store.moves).toEqual(["Uploaded+Queued+Started"])
      expect(store.byId.get(w.id)).toMatchObject({ status: "running", started_at: startedAt, queue_number: 0 })
    }).pipe(Effect.provide(layerFor(store, {
      // The WebSocket's execution_start arrives while the POST is answered.
      submit: (_, p) => Effect.suspend(() => driving!.inFlight.noteStart(p.prompt_id, startedAt)).pipe(Effect.as({ prompt_id: p.prompt_id, number: 1 }))
    })))
  })

  it.effect("records a prompt the runner rejects as invalid, with the runner's reason", () => {
    const w = workflowOn()
    const store = new FakeWorkflows([w])
    return Effect.gen(function*() {
      yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: false })
      expect(store.byId.get(w.id)).toMatchObject({
        status: "invalid",
        error_node: "1",
        exception_type: "prompt_outputs_failed_validation",
        exception_message: "Required input is missing: color"
      })
    }).pipe(Effect.provide(layerFor(store, {
      submit: () =>
        Effect.fail(new PromptRejected({
          runner_id: runner.id,
          error_type: "prompt_outputs_failed_validation",
          message: "Required input is missing: color",
          error_node: "1"
        }))
    })))
  })

  describe("parameters typed by the runner's inputs", () => {
    const switchGraph = { "1": { class_type: "Switch", inputs: { on: "$text(on)", label: "$text(on)" } } }
    /** The runner's capabilities: `Switch.on` a BOOLEAN, `Switch.label` a STRING. */
    const capabilities = Layer.mock(RunnerCapabilities, {
      lookupAll: (ids) => {
        const summary = summarize({ Switch: { input: { required: { on: ["BOOLEAN", { default: true }], label: ["STRING", {}] } } } })
        const known = { record: { runner_id: runner.id, runner_kind: "user" as const, summary, hash: "h", read_at: Fixtures.at(0) }, index: indexSummary(summary) }
        return Effect.succeed(ids.map((id) => (id === runner.id ? Option.some(known) : Option.none())))
      }
    })
    const posting = (posted: Array<SubmitPrompt>) => ({
      submit: (_: unknown, p: SubmitPrompt) => Effect.sync(() => posted.push(p)).pipe(Effect.as({ prompt_id: p.prompt_id, number: 1 }))
    })

    it.effect("posts false to a BOOLEAN input as JSON false, and the same value to a STRING input as text", () => {
      const w = workflowOn({ workflow_json: switchGraph, workflow_params: [["$text(on)", "false"]] })
      const store = new FakeWorkflows([w])
      const posted: Array<SubmitPrompt> = []
      return Effect.gen(function*() {
        yield* claimedNow(w)
        yield* submit({ workflow: w, resubmit: false })
        expect(posted.map((p) => p.prompt)).toEqual([{ "1": { class_type: "Switch", inputs: { on: false, label: "false" } } }])
      }).pipe(Effect.provide(Layer.merge(layerFor(store, posting(posted)), capabilities)))
    })

    it.effect("ends a workflow invalid, posting nothing, when its runner's input does not take the value", () => {
      const w = workflowOn({ workflow_json: switchGraph, workflow_params: [["$text(on)", "maybe"]] })
      const store = new FakeWorkflows([w])
      const posted: Array<SubmitPrompt> = []
      return Effect.gen(function*() {
        yield* claimedNow(w)
        yield* submit({ workflow: w, resubmit: false })
        expect(posted).toEqual([])
        expect(store.byId.get(w.id)).toMatchObject({
          status: "invalid",
          error_node: "1",
          exception_type: "InvalidParameter",
          exception_message: 'Parameter validation failed: $on "maybe" cannot fill node "1" (Switch.on), which takes a BOOLEAN (true/false, yes/no or 1/0)'
        })
      }).pipe(Effect.provide(Layer.merge(layerFor(store, posting(posted)), capabilities)))
    })
  })

  it.effect("a prompt the runner rejects after its WebSocket showed it starting is invalid: the start is not written", () => {
    const w = workflowOn()
    const store = new FakeWorkflows([w])
    // The store takes its time with the rejection: a write waiting for its turn would go first.
    const slowRejection: typeof store.transition = (request) =>
      request.steps[0]._tag === "Rejected"
        ? Effect.andThen(Effect.forEach(Array.from({ length: 50 }), () => Effect.yieldNow, { discard: true }), store.transition(request))
        : store.transition(request)
    let handling: Fiber.Fiber<void, never> | undefined
    let driving: DrivingShape | undefined
    let startSeen: (id: string) => Effect.Effect<void> = () => Effect.void
    return Effect.gen(function*() {
      driving = yield* Driving
      const context = yield* Effect.context<Effect.Services<ReturnType<typeof handleEvents>>>()
      startSeen = (id) => Effect.provide(handleEvents([{ _tag: "ExecutionStart", prompt_id: id, timestamp: 5_000 }]), context)
      const recorded = yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: false })
      // What the claim loop does once the submission returns.
      yield* Deferred.succeed(recorded, undefined)
      yield* Fiber.join(handling!)
      expect(store.moves).toEqual(["Rejected"])
      expect(store.byId.get(w.id)).toMatchObject({ status: "invalid", started_at: null, exception_type: "prompt_outputs_failed_validation" })
    }).pipe(Effect.provide(layerFor(store, {
      // ComfyUI started the valid part as it answered 200 with node_errors; the client took it back.
      submit: (_, p) =>
        Effect.gen(function*() {
          handling = yield* Effect.forkChild(startSeen(p.prompt_id))
          while (Option.flatMap(yield* driving!.inFlight.get(p.prompt_id), (t) => Option.fromNullishOr(t.startedAt))._tag === "None") yield* Effect.yieldNow
          return yield* Effect.fail(new PromptRejected({
            runner_id: runner.id,
            error_type: "prompt_outputs_failed_validation",
            message: "Some outputs failed validation: node 3 (SaveImage): Required input is missing: images",
            error_node: "3"
          }))
        })
    }, { transition: slowRejection })))
  })

  it.effect("retries an unreachable runner with growing, capped delays (asking first whether the post arrived), then fails the workflow when no other runner can take it", () => {
    const w = workflowOn({ dispatch_attempts: 2 })
    const store = new FakeWorkflows([w])
    const attempts: Array<number> = []
    let asked = 0
    return Effect.gen(function*() {
      yield* claimedNow(w)
      const fiber = yield* Effect.forkChild(submit({ workflow: w, resubmit: false }))
      // Four attempts (options.submitAttempts), 1-2 s, 2-4 s, 4-8 s apart (jittered down to half).
      for (let i = 0; i < 20 && attempts.length < 4; i++) yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
      expect(attempts).toHaveLength(4)
      const gaps = attempts.slice(1).map((t, i) => t - attempts[i]!)
      expect(gaps[0]).toBeGreaterThanOrEqual(500)
      expect(gaps[1]!).toBeGreaterThan(gaps[0]!)
      expect(gaps[2]!).toBeLessThanOrEqual(8_000)
      expect(store.byId.get(w.id)).toMatchObject({ status: "failed", exception_type: "RunnerUnavailable" })
      expect(asked).toBe(3)
    }).pipe(Effect.provide(layerFor(store, {
      submit: () =>
        Effect.flatMap(Effect.clockWith((c) => c.currentTimeMillis), (now) => {
          attempts.push(now)
          return Effect.fail(new RunnerUnreachable({ runner_id: runner.id, message: "connect ECONNREFUSED" }))
        }),
      // A post that timed out may have arrived: every retry asks first.
      status: () => Effect.sync(() => asked++).pipe(Effect.as({ _tag: "Unknown" as const }))
    })))
  })

  it.effect("posts nothing to a runner found below ComfyUI 0.3.45 since it was registered, and moves the workflow on naming why", () => {
    // The last runner it may try: with nowhere else to go, it fails with the reason.
    const w = workflowOn({ dispatch_attempts: 2 })
    const store = new FakeWorkflows([w])
    const downgraded = { ...runner, comfyui: { version: "0.3.44", devices: [], jobs_api: false } }
    return Effect.gen(function*() {
      yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: false })
      expect(store.byId.get(w.id)).toMatchObject({
        status: "failed",
        exception_type: "RunnerUnavailable",
        exception_message: "No runner could take the workflow: runner runs ComfyUI 0.3.44; WES needs ComfyUI 0.3.45 or later"
      })
      // no submit, no status: either would fail the test (Layer.mock dies on it)
    }).pipe(Effect.provide(layerFor(store, {}, { scheduler: Layer.mock(Scheduler, { resolve: () => Effect.succeed(Option.some(downgraded)) }) })))
  })

  it.effect("reads the runner again before moving a workflow away: an upgrade since the driver's copy was read still gets the post", () => {
    const w = workflowOn()
    const store = new FakeWorkflows([w])
    const reads = [{ ...runner, comfyui: { version: "0.3.40", devices: [], jobs_api: false } }, { ...runner, comfyui: { version: "0.3.64", devices: [], jobs_api: false } }]
    let posted = 0
    return Effect.gen(function*() {
      // The driver's copy, read before the upgrade (and fresh for `runnerRefreshInterval`).
      expect(Option.map(yield* (yield* Driving).target, (t) => t.comfyui?.version)).toEqual(Option.some("0.3.40"))
      yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: false })
      expect(posted).toBe(1)
      expect(store.byId.get(w.id)).toMatchObject({ status: "queued" })
    }).pipe(Effect.provide(layerFor(store, {
      submit: (_, p) => Effect.sync(() => posted++).pipe(Effect.as({ prompt_id: p.prompt_id, number: 1 }))
    }, { scheduler: Layer.mock(Scheduler, { resolve: () => Effect.sync(() => Option.some(reads.length > 1 ? reads.shift()! : reads[0]!)) }) })))
  })

  it.effect("asks the runner before posting again what an earlier claim may have posted, and posts nothing when it has it", () => {
    const w = workflowOn({ status: "uploaded", submitted_at: Fixtures.at(1) })
    const store = new FakeWorkflows([w])
    return Effect.gen(function*() {
      yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: true })
      expect(store.moves).toEqual(["Queued"])
      expect(store.byId.get(w.id)).toMatchObject({ status: "queued", queue_number: 2 })
    }).pipe(Effect.provide(layerFor(store, {
      status: () => Effect.succeed({ _tag: "Pending" as const, position: 2 })
      // no submit: posting again would fail the test (Layer.mock dies on it)
    })))
  })

  it.effect("does not post once the lease may be lost (another instance may drive the runner)", () => {
    const w = workflowOn()
    const store = new FakeWorkflows([w])
    const lost = { clientId: "c", lost: Effect.never, held: () => false }
    return Effect.gen(function*() {
      yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: false })
      expect(store.moves).toEqual([])
    }).pipe(Effect.provide(layerFor(store, {}, { driving: { lease: lost } })))
  })

  it.effect("hands the lease to the client as the post's fence: a lease that ends while the post waits withholds it, and nothing is recorded", () => {
    const w = workflowOn()
    const store = new FakeWorkflows([w])
    // Held when Submit checks it; gone by the time the client is about to write the request.
    let checks = 0
    const ending = { clientId: "c", lost: Effect.never, held: () => ++checks === 1 }
    return Effect.gen(function*() {
      yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: false })
      expect(checks).toBe(2)
      expect(store.moves).toEqual([])
      const driving = yield* Driving
      expect(Option.isNone(yield* driving.inFlight.get(w.id))).toBe(true)
    }).pipe(Effect.provide(layerFor(store, {
      submit: (runner, p) =>
        p.fence?.() === true
          ? Effect.succeed({ prompt_id: p.prompt_id, number: 1 })
          : Effect.fail(new PromptWithheld({ runner_id: runner.id, message: "withheld" }))
    }, { driving: { lease: ending } })))
  })

  it.effect("waits for the runner's WebSocket to open before a driver's first post, at most 5 seconds", () => {
    const w = workflowOn()
    const store = new FakeWorkflows([w])
    let postedAt = -1
    return Effect.gen(function*() {
      yield* claimedNow(w)
      const fiber = yield* Effect.forkChild(submit({ workflow: w, resubmit: false }))
      yield* TestClock.adjust("4 seconds")
      expect(postedAt).toBe(-1)
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
      expect(postedAt).toBe(Duration.toMillis("5 seconds"))
    }).pipe(Effect.provide(layerFor(store, {
      submit: (_, p) =>
        Effect.flatMap(Effect.clockWith((c) => c.currentTimeMillis), (now) => {
          postedAt = now
          return Effect.succeed({ prompt_id: p.prompt_id, number: 1 })
        })
    }, { driving: { socketClosed: true } })))
  })

  it.effect("uploads a file parameter first and posts the runner's name for it", () => {
    const w = workflowOn({
      workflow_json: { "1": { class_type: "LoadImage", inputs: { image: "$file(photo)" } } },
      workflow_params: [["$file(photo)", "inputs/x/photo/cat.png"]]
    })
    const store = new FakeWorkflows([w])
    const posted: Array<SubmitPrompt> = []
    return Effect.gen(function*() {
      yield* claimedNow(w)
      yield* submit({ workflow: w, resubmit: false })
      expect(posted[0]!.prompt).toEqual({ "1": { class_type: "LoadImage", inputs: { image: `wes/${w.id}_cat.png` } } })
      expect(store.moves).toEqual(["Uploaded", "Queued"])
    }).pipe(Effect.provide(layerFor(store, {
      uploadInput: (_, file) => Effect.succeed({ name: file.filename, subfolder: "wes", type: "input" }),
      submit: (_, p) => Effect.sync(() => posted.push(p)).pipe(Effect.as({ prompt_id: p.prompt_id, number: 1 }))
    }, {
      blobs: { get: () => Effect.succeed(Option.some({ size: 3, content_type: "image/png", stream: Stream.make(new Uint8Array([1, 2, 3])) })) }
    })))
  })
})

