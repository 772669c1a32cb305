import { describe, expect, it } from "@effect/vitest"
import { BlobStore, isBlobBytes, type NewWorkflowEvent, RunnerGateway, type RunnerEvent, WorkflowEventBus, WorkflowRepository } from "@wes/core"
import { FRAME_OUTPUT_LIMIT, frameNodesOf } from "../../src/dispatch/FrameOutputs.js"
import { IdGenerator } from "../../src/domain/Ids.js"
import { Fixtures } from "@wes/core/testing"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { Driving } from "../../src/dispatch/Driving.js"
import { recordEnd } from "../../src/dispatch/Finish.js"
import { answer } from "../../src/dispatch/PostAnswer.js"
import { handleEvents } from "../../src/dispatch/Track.js"
import { drivingLayer, FakeWorkflows, headOf, schedulerFor, workflowOn, retryLayer } from "./harness.js"

const graph = {
  "1": { class_type: "EmptyImage", inputs: {} },
  "2": { class_type: "SaveImage", inputs: { images: ["1", 0] } }
}

const success = { outcome: "success" as const, outputs: [], started_at: 1_000, completed_at: 2_000, error: null }

const layerFor = (
  store: FakeWorkflows,
  arranged: {
    readonly gateway?: Partial<RunnerGateway["Service"]>
    readonly published?: Array<readonly [string, ReadonlyArray<NewWorkflowEvent>]>
    readonly blobs?: Partial<BlobStore["Service"]>
    readonly ids?: Partial<IdGenerator["Service"]>
  } = {}
) =>
  Layer.mergeAll(
    Layer.mock(WorkflowRepository, { transition: store.transition }),
    Layer.mock(RunnerGateway, arranged.gateway ?? {}),
    Layer.mock(WorkflowEventBus, arranged.published === undefined ? {} : {
      publish: (id, events) => Effect.sync(() => arranged.published!.push([id, events])).pipe(Effect.as([]))
    }),
    Layer.mock(BlobStore, arranged.blobs ?? {}),
    Layer.mock(IdGenerator, arranged.ids ?? {}),
    retryLayer()
  ).pipe(Layer.provideMerge(drivingLayer()), Layer.provideMerge(schedulerFor()))

/** Puts `w` on the runner as this driver's (queued there). */
const onRunner = (w: ReturnType<typeof workflowOn>) =>
  Effect.flatMap(Driving, ({ inFlight }) => inFlight.put({ workflow: headOf(w), phase: "onRunner", nodes: Object.keys(w.workflow_json) }))

/** Lets forked parts (the end of a prompt) run until `done` holds. */
const eventually = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200 && !done(); i++) yield* Effect.yieldNow
    expect(done()).toBe(true)
  })

const executing = (id: string, node: string): RunnerEvent => ({ _tag: "Executing", prompt_id: id, node })

describe("Track", () => {
  /** A prompt's end arriving with two run events, for a workflow the driver last wrote as `status`. */
  const endWithRunEvents = (status: "running" | "queued", check: (w: ReturnType<typeof workflowOn>, store: FakeWorkflows, published: ReadonlyArray<readonly [string, ReadonlyArray<NewWorkflowEvent>]>) => Effect.Effect<void, never, Driving>) => {
    const w = workflowOn({ status, workflow_json: graph })
    const store = new FakeWorkflows([w])
    const published: Array<readonly [string, ReadonlyArray<NewWorkflowEvent>]> = []
    return Effect.gen(function*() {
      yield* onRunner(w)
      yield* handleEvents([executing(w.id, "1"), executing(w.id, "2"), { _tag: "PromptDone", prompt_id: w.id }])
      yield* check(w, store, published)
    }).pipe(Effect.provide(layerFor(store, { gateway: { history: () => Effect.succeed(Option.some(success)) }, published })))
  }

  it.effect("publishes the run events that arrive with a running prompt's end at once, then writes the end", () =>
    endWithRunEvents("running", (w, store, published) =>
      Effect.gen(function*() {
        // Out before the end is recorded: they do not wait for the end's write (nor for other ends queued before it).
        expect(published).toEqual([[w.id, [
          { type: "executing", data: { node: "1", percent: 0 } },
          { type: "executing", data: { node: "2", percent: 50 } }
        ]]])
        yield* eventually(() => store.status(w.id) === "completed")
        expect(store.moves).toEqual(["Completed"])
        expect(store.requests[0]!.events ?? []).toEqual([])
        expect(Option.isNone(yield* Effect.flatMap(Driving, (d) => d.inFlight.get(w.id)))).toBe(true)
      })))

  it.effect("run events with the end of a prompt not yet written as running ride on the end's write, after running", () =>
    endWithRunEvents("queued", (w, store, published) =>
      Effect.gen(function*() {
        yield* eventually(() => store.status(w.id) === "completed")
        // Published on their own they would come before `running`: one write puts them in order.
        expect(published).toEqual([])
        expect(store.moves).toEqual(["Started+Completed"])
        expect(store.requests[0]!.events).toEqual([
          { type: "executing", data: { node: "1", percent: 0 } },
          { type: "executing", data: { node: "2", percent: 50 } }
        ])
      })))

  it.effect("publishes the run events of a prompt still running once per batch, with the overall percent", () => {
    const w = workflowOn({ status: "running", workflow_json: graph })
    const store = new FakeWorkflows([w])
    const published: Array<readonly [string, ReadonlyArray<NewWorkflowEvent>]> = []
    return Effect.gen(function*() {
      yield* onRunner(w)
      yield* handleEvents([
        { _tag: "ExecutionCached", prompt_id: w.id, nodes: [] },
        executing(w.id, "1"),
        { _tag: "Executed", prompt_id: w.id, node: "1", output: null },
        executing(w.id, "2"),
        { _tag: "Progress", prompt_id: w.id, node: "2", value: 5, max: 10 }
      ])
      yield* handleEvents([executing(w.id, "2")])
      expect(published).toEqual([
        [w.id, [
          { type: "executing", data: { node: "1", percent: 0 } },
          { type: "executing", data: { node: "2", percent: 50 } },
          { type: "progress", data: { node: "2", value: 5, max: 10, percent: 75 } }
        ]],
        [w.id, [{ type: "executing", data: { node: "2", percent: 75 } }]]
      ])
      expect(store.moves).toEqual([])
    }).pipe(Effect.provide(layerFor(store, { published })))
  })

  it.effect("ignores events of prompts it does not track (another client's, or finished)", () => {
    const store = new FakeWorkflows()
    const stranger = Fixtures.uuid()
    return Effect.gen(function*() {
      yield* handleEvents([
        { _tag: "ExecutionStart", prompt_id: stranger, timestamp: null },
        executing(stranger, "1"),
        { _tag: "Progress", prompt_id: stranger, node: "1", value: 1, max: 2 },
        { _tag: "PromptDone", prompt_id: stranger }
      ])
      yield* Effect.yieldNow
      // Any write or runner call would have failed the test: the mocks arrange none.
      expect(store.requests).toEqual([])
    }).pipe(Effect.provide(layerFor(store)))
  })

  it.effect("a start seen while the prompt is being submitted waits for the submission, which writes it", () => {
    const w = workflowOn({ workflow_json: graph })
    const store = new FakeWorkflows([w])
    return Effect.gen(function*() {
      const driving = yield* Driving
      const recorded = yield* driving.inFlight.submitting(headOf(w), Object.keys(graph))
      const handling = yield* Effect.forkChild(handleEvents([{ _tag: "ExecutionStart", prompt_id: w.id, timestamp: 5_000 }]))
      yield* Effect.yieldNow
      expect(Option.map(yield* driving.inFlight.get(w.id), (t) => t.startedAt)).toEqual(Option.some(DateTime.makeUnsafe(5_000)))
      expect(handling.pollUnsafe()).toBeUndefined()
      // The submission writes uploaded, queued and running in one write, then says so.
      yield* store.transition({ id: w.id, steps: [{ _tag: "Uploaded" }, { _tag: "Queued", prompt_id: w.id, queue_number: 0 }, { _tag: "Started" }], at: Fixtures.at(1) })
      yield* driving.inFlight.refresh(headOf(store.byId.get(w.id)!))
      yield* Deferred.succeed(recorded, undefined)
      yield* Fiber.join(handling)
      expect(store.moves).toEqual(["Uploaded+Queued+Started"])
    }).pipe(Effect.provide(layerFor(store)))
  })

  it.effect("a run the socket showed whole ends from what it showed, without reading the history", () => {
    const w = workflowOn({ status: "queued", workflow_json: graph })
    const store = new FakeWorkflows([w])
    const image = { node_id: "2", filename: "out_00001_.png", subfolder: "", type: "output" }
    const downloaded: Array<string> = []
    return Effect.gen(function*() {
      yield* onRunner(w)
      yield* handleEvents([
        { _tag: "ExecutionStart", prompt_id: w.id, timestamp: 1_000 },
        executing(w.id, "1"),
        { _tag: "Executed", prompt_id: w.id, node: "2", output: { images: [image] }, files: [image] },
        { _tag: "ExecutionSuccess", prompt_id: w.id, timestamp: 2_000 },
        { _tag: "PromptDone", prompt_id: w.id }
      ])
      yield* eventually(() => store.status(w.id) === "completed")
      // No history read: the gateway mock arranges none and would have failed the end.
      expect(downloaded).toEqual(["out_00001_.png"])
      expect(store.byId.get(w.id)).toMatchObject({ started_at: DateTime.makeUnsafe(1_000), completed_at: DateTime.makeUnsafe(2_000) })
      expect(store.requests.at(-1)!.outputs!.map((o) => [o.node_id, o.filename])).toEqual([["2", "out_00001_.png"]])
    }).pipe(Effect.provide(layerFor(store, {
      gateway: {
        download: (_, file) =>
          Effect.sync(() => downloaded.push(file.filename)).pipe(
            Effect.as({ content_type: "image/png", content: Stream.make(new Uint8Array([1])) })
          )
      },
      blobs: { put: () => Effect.succeed(1) },
      ids: { next: Effect.sync(() => Fixtures.uuid()) }
    })))
  })

  it.effect("a prompt that starts and ends in one batch is written once: running with its end", () => {
    const w = workflowOn({ status: "queued", workflow_json: graph })
    const store = new FakeWorkflows([w])
    return Effect.gen(function*() {
      yield* onRunner(w)
      yield* handleEvents([
        { _tag: "ExecutionStart", prompt_id: w.id, timestamp: 1_000 },
        executing(w.id, "1"),
        { _tag: "Executed", prompt_id: w.id, node: "2", output: null, files: [] },
        { _tag: "ExecutionSuccess", prompt_id: w.id, timestamp: 2_000 },
        { _tag: "PromptDone", prompt_id: w.id }
      ])
      yield* eventually(() => store.status(w.id) === "completed")
      expect(store.moves).toEqual(["Started+Completed"])
      expect(store.byId.get(w.id)).toMatchObject({ started_at: DateTime.makeUnsafe(1_000), completed_at: DateTime.makeUnsafe(2_000) })
    }).pipe(Effect.provide(layerFor(store)))
  })

  it.effect("a batch that starts and ends a prompt being submitted does not wait for the submission; the end, written once, waits for the runner's answer", () => {
    const w = workflowOn({ workflow_json: graph })
    const store = new FakeWorkflows([w])
    return Effect.gen(function*() {
      const driving = yield* Driving
      // The submission never records here: a batch that waited for it would never return.
      yield* driving.inFlight.submitting(headOf(w), Object.keys(graph))
      yield* handleEvents([
        { _tag: "ExecutionStart", prompt_id: w.id, timestamp: 1_000 },
        { _tag: "Executed", prompt_id: w.id, node: "2", output: null, files: [] },
        { _tag: "ExecutionSuccess", prompt_id: w.id, timestamp: 2_000 },
        { _tag: "PromptDone", prompt_id: w.id }
      ])
      for (let i = 0; i < 50; i++) yield* Effect.yieldNow
      expect(store.moves).toEqual([])
      // The runner accepted the post: the submission leaves the end's path to write every step.
      expect(yield* answer(w.id, "posted")).toBe(true)
      yield* eventually(() => store.status(w.id) === "completed")
      expect(store.moves).toEqual(["Uploaded+Queued+Started+Completed"])
    }).pipe(Effect.provide(layerFor(store)))
  })

  it.effect("the end of a prompt being submitted that the runner then rejects is not written", () => {
    const w = workflowOn({ workflow_json: graph })
    const store = new FakeWorkflows([w])
    return Effect.gen(function*() {
      const driving = yield* Driving
      yield* driving.inFlight.submitting(headOf(w), Object.keys(graph))
      yield* handleEvents([
        { _tag: "ExecutionStart", prompt_id: w.id, timestamp: 1_000 },
        { _tag: "ExecutionInterrupted", prompt_id: w.id, timestamp: 2_000 },
        { _tag: "PromptDone", prompt_id: w.id }
      ])
      for (let i = 0; i < 50; i++) yield* Effect.yieldNow
      expect(yield* answer(w.id, "rejected")).toBe(true)
      for (let i = 0; i < 50; i++) yield* Effect.yieldNow
      expect(store.moves).toEqual([])
      expect(Option.map(yield* driving.inFlight.get(w.id), (t) => t.phase)).toEqual(Option.some("submitting"))
    }).pipe(Effect.provide(layerFor(store)))
  })

  describe("images sent as WebSocket frames", () => {
    /** EmptyImage -> a sampler (previews) -> VAE-like decode -> SaveImageWebsocket, and a custom sink that sends frames too. */
    const wsGraph = {
      "1": { class_type: "EmptyImage", inputs: {} },
      "2": { class_type: "KSampler", inputs: { latent_image: ["1", 0] } },
      "3": { class_type: "SaveImageWebsocket", inputs: { images: ["2", 0] } },
      "4": { class_type: "ETN_SendImageWebSocket", inputs: { images: ["2", 0] } },
      "5": { class_type: "SaveImage", inputs: { images: ["2", 0] } }
    }
    const png = (n: number) => new Uint8Array([0x89, 0x50, 0x4e, 0x47, n])
    const frame = (id: string, node: string, image: Uint8Array, image_type = "image/png"): RunnerEvent =>
      ({ _tag: "ImageFrame", prompt_id: id, node, image_type, image })
    const saved = { node_id: "5", filename: "saved_00001_.png", subfolder: "", type: "output" }

    /** The workflow tracked as this driver's claim notes it (with the nodes whose frames may be outputs). */
    const claimed = (w: ReturnType<typeof workflowOn>) =>
      Effect.gen(function*() {
        const { inFlight } = yield* Driving
        yield* inFlight.submitting(headOf(w), Object.keys(w.workflow_json), frameNodesOf(w.workflow_json))
        yield* inFlight.shift(w.id, ["submitting"], "onRunner")
      })

    const stores = () => {
      const blobs = new Map<string, { readonly bytes: ReadonlyArray<Uint8Array>; readonly type: string }>()
      return {
        blobs,
        layer: (store: FakeWorkflows, gateway: Partial<RunnerGateway["Service"]> = {}) =>
          layerFor(store, {
            gateway,
            published: [],
            blobs: {
              put: (key, content, type) =>
                isBlobBytes(content)
                  ? Effect.sync(() => blobs.set(key, { bytes: content, type })).pipe(Effect.as(content.reduce((n, c) => n + c.length, 0)))
                  : Effect.map(Stream.runCollect(content), (chunks) => {
                    blobs.set(key, { bytes: Array.from(chunks), type })
                    return Array.from(chunks).reduce((n, c) => n + c.length, 0)
                  })
            },
            ids: { next: Effect.sync(() => Fixtures.uuid()) }
          })
      }
    }

    it.effect("a SaveImageWebsocket image is an output, stored from the frame; a sampler's preview is not; a sink's frames are outputs unless it lists files", () => {
      const w = workflowOn({ status: "queued", workflow_json: wsGraph })
      const store = new FakeWorkflows([w])
      const { blobs, layer } = stores()
      return Effect.gen(function*() {
        yield* claimed(w)
        yield* handleEvents([
          { _tag: "ExecutionStart", prompt_id: w.id, timestamp: 1_000 },
          executing(w.id, "2"),
          frame(w.id, "2", png(1)),
          frame(w.id, "2", png(2), "image/jpeg"),
          executing(w.id, "3"),
          frame(w.id, "3", png(3)),
          frame(w.id, "3", png(4))
        ])
        yield* handleEvents([
          executing(w.id, "4"),
          frame(w.id, "4", png(5), "image/jpeg"),
          executing(w.id, "5"),
          // An output node that sends previews and saves files: only its files are outputs.
          frame(w.id, "5", png(6)),
          { _tag: "Executed", prompt_id: w.id, node: "5", output: { images: [saved] }, files: [saved] },
          { _tag: "ExecutionSuccess", prompt_id: w.id, timestamp: 2_000 },
          { _tag: "PromptDone", prompt_id: w.id }
        ])
        yield* eventually(() => store.status(w.id) === "completed")
        const outputs = store.requests.at(-1)!.outputs!
        expect(outputs.map((o) => [o.node_id, o.filename, o.subfolder, o.type, o.content_type, o.size])).toEqual([
          ["5", "saved_00001_.png", "", "output", "image/png", 1],
          ["3", "websocket_3_00001_.png", "", "websocket", "image/png", 5],
          ["3", "websocket_3_00002_.png", "", "websocket", "image/png", 5],
          ["4", "websocket_4_00001_.jpg", "", "websocket", "image/jpeg", 5]
        ])
        // Each image stored as the bytes of its frame, under its output's key.
        expect(outputs.slice(1).map((o) => blobs.get(o.blob_key))).toEqual([
          { bytes: [png(3)], type: "image/png" },
          { bytes: [png(4)], type: "image/png" },
          { bytes: [png(5)], type: "image/jpeg" }
        ])
        expect(Option.isNone(yield* Effect.flatMap(Driving, (d) => d.inFlight.get(w.id)))).toBe(true)
      }).pipe(Effect.provide(layer(store, {
        download: () => Effect.succeed({ content_type: "image/png", content: [new Uint8Array([9])] })
      })))
    })

    it.effect("a run whose SaveImageWebsocket images may have been missed (the socket reconnected) fails with OutputUnavailable", () => {
      const w = workflowOn({ status: "running", workflow_json: wsGraph })
      const store = new FakeWorkflows([w])
      return Effect.gen(function*() {
        yield* claimed(w)
        yield* handleEvents([{ _tag: "ExecutionStart", prompt_id: w.id, timestamp: 1_000 }, executing(w.id, "3"), frame(w.id, "3", png(1))])
        yield* handleEvents([{ _tag: "Disconnected", reason: "closed" }, { _tag: "Connected" }])
        yield* handleEvents([{ _tag: "ExecutionSuccess", prompt_id: w.id, timestamp: 2_000 }, { _tag: "PromptDone", prompt_id: w.id }])
        yield* eventually(() => store.status(w.id) === "failed")
        expect(store.byId.get(w.id)).toMatchObject({ exception_type: "OutputUnavailable", exception_message: expect.stringContaining("SaveImageWebsocket node (3)") })
      }).pipe(Effect.provide(stores().layer(store, { history: () => Effect.succeed(Option.some(success)) })))
    })

    it.effect("an inherited prompt's SaveImageWebsocket nodes come from the prompt its history shows", () => {
      const w = workflowOn({ status: "running", workflow_json: wsGraph })
      const store = new FakeWorkflows([w])
      return Effect.gen(function*() {
        // Adopted by reconciliation: its graph was not noted, and its frames went to another client.
        yield* onRunner(w)
        yield* handleEvents([{ _tag: "PromptDone", prompt_id: w.id }])
        yield* eventually(() => store.status(w.id) === "failed")
        expect(store.byId.get(w.id)).toMatchObject({ exception_type: "OutputUnavailable" })
      }).pipe(Effect.provide(stores().layer(store, {
        history: () => Effect.succeed(Option.some({ ...success, classes: { "1": "EmptyImage", "3": "SaveImageWebsocket" } }))
      })))
    })

    it.effect("a history read before the socket delivered the end (reconciliation first) leaves the end to the socket, images and all", () => {
      const w = workflowOn({ status: "running", workflow_json: wsGraph })
      const store = new FakeWorkflows([w])
      const { layer } = stores()
      return Effect.gen(function*() {
        const driving = yield* Driving
        yield* claimed(w)
        yield* handleEvents([{ _tag: "ExecutionStart", prompt_id: w.id, timestamp: 1_000 }, executing(w.id, "3"), frame(w.id, "3", png(1))])
        // What Reconcile does with a history it found.
        expect(yield* driving.inFlight.shift(w.id, ["onRunner"], "finishing")).toBe(true)
        yield* recordEnd(w.id, success)
        expect(store.moves).toEqual([])
        expect(Option.map(yield* driving.inFlight.get(w.id), (t) => t.phase)).toEqual(Option.some("onRunner"))
        yield* handleEvents([{ _tag: "ExecutionSuccess", prompt_id: w.id, timestamp: 2_000 }, { _tag: "PromptDone", prompt_id: w.id }])
        yield* eventually(() => store.status(w.id) === "completed")
        expect(store.requests.at(-1)!.outputs!.map((o) => o.filename)).toEqual(["websocket_3_00001_.png"])
      }).pipe(Effect.provide(layer(store)))
    })

    it.effect("a run seen whole keeps its images for an end recorded from the history, even after a reconnection", () => {
      const w = workflowOn({ status: "running", workflow_json: wsGraph })
      const store = new FakeWorkflows([w])
      const { layer } = stores()
      return Effect.gen(function*() {
        const driving = yield* Driving
        yield* claimed(w)
        yield* handleEvents([
          { _tag: "ExecutionStart", prompt_id: w.id, timestamp: 1_000 },
          executing(w.id, "3"),
          frame(w.id, "3", png(1)),
          { _tag: "ExecutionSuccess", prompt_id: w.id, timestamp: 2_000 },
          { _tag: "Disconnected", reason: "closed" },
          { _tag: "Connected" }
        ])
        expect(yield* driving.inFlight.shift(w.id, ["onRunner"], "finishing")).toBe(true)
        yield* recordEnd(w.id, success)
        expect(store.status(w.id)).toBe("completed")
        expect(store.requests.at(-1)!.outputs!.map((o) => o.filename)).toEqual(["websocket_3_00001_.png"])
      }).pipe(Effect.provide(layer(store)))
    })

    it.effect("a run that sends more images than WES keeps for one workflow fails with OutputTooLarge", () => {
      const w = workflowOn({ status: "running", workflow_json: wsGraph })
      const store = new FakeWorkflows([w])
      // Only its length is read: a frame of the limit's size without allocating it.
      const huge = Object.defineProperty(new Uint8Array(1), "length", { value: FRAME_OUTPUT_LIMIT })
      return Effect.gen(function*() {
        yield* claimed(w)
        yield* handleEvents([
          { _tag: "ExecutionStart", prompt_id: w.id, timestamp: 1_000 },
          executing(w.id, "3"),
          frame(w.id, "3", huge),
          frame(w.id, "3", png(1)),
          { _tag: "ExecutionSuccess", prompt_id: w.id, timestamp: 2_000 },
          { _tag: "PromptDone", prompt_id: w.id }
        ])
        yield* eventually(() => store.status(w.id) === "failed")
        expect(store.byId.get(w.id)).toMatchObject({ exception_type: "OutputTooLarge", exception_message: expect.stringContaining("256 MiB") })
      }).pipe(Effect.provide(stores().layer(store)))
    })
  })

  for (
    const [gap, events] of [
      ["a reconnection", [{ _tag: "Disconnected", reason: "closed" }, { _tag: "Connected" }]],
      ["an unreadable message", [{ _tag: "Unreadable", reason: "executed: prompt_id is missing" }]]
    ] as const
  ) {
    it.effect(`after ${gap} during a run, its end is read from the history`, () => {
      const w = workflowOn({ status: "running", workflow_json: graph })
      const store = new FakeWorkflows([w])
      let reads = 0
      return Effect.gen(function*() {
        yield* onRunner(w)
        yield* handleEvents([{ _tag: "ExecutionStart", prompt_id: w.id, timestamp: 1_000 }, ...events])
        yield* handleEvents([
          { _tag: "Executed", prompt_id: w.id, node: "2", output: null, files: [] },
          { _tag: "ExecutionSuccess", prompt_id: w.id, timestamp: 2_000 },
          { _tag: "PromptDone", prompt_id: w.id }
        ])
        yield* eventually(() => store.status(w.id) === "completed")
        expect(reads).toBe(1)
      }).pipe(Effect.provide(layerFor(store, {
        gateway: { history: () => Effect.sync(() => reads++).pipe(Effect.as(Option.some(success))) }
      })))
    })
  }

  it.effect("a (re)connection asks for reconciliation and opens the way for the first post", () =>
    Effect.gen(function*() {
      const driving = yield* Driving
      yield* handleEvents([{ _tag: "Connected" }, { _tag: "QueueChanged", queue_remaining: 2 }])
      expect(yield* Deferred.isDone(driving.socketOpen)).toBe(true)
      expect(yield* Queue.size(driving.reconcileNow)).toBe(1)
      expect(yield* Queue.size(driving.queueChanged)).toBe(1)
    }).pipe(Effect.provide(layerFor(new FakeWorkflows()))))
})
