import { describe, expect, it } from "@effect/vitest"
import { BlobStore, isBlobBytes, type NewWorkflowEvent, type PromptHistory, RunnerGateway, RunnerUnreachable, StorageError, WorkflowEventBus, WorkflowRepository } from "@wes/core"
import { IdGenerator } from "../../src/domain/Ids.js"
import { Scheduler } from "../../src/usecases/Scheduler.js"
import { Fixtures } from "@wes/core/testing"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/testing/TestClock"
import * as Fiber from "effect/Fiber"
import { Driving } from "../../src/dispatch/Driving.js"
import { finish } from "../../src/dispatch/Finish.js"
import { drivingLayer, FakeWorkflows, headOf, runner, schedulerFor, workflowOn, retryLayer } from "./harness.js"

const image = { node_id: "9", filename: "out_00001_.png", subfolder: "", type: "output" }

const layerFor = (
  store: FakeWorkflows,
  gateway: Partial<RunnerGateway["Service"]>,
  extra: {
    readonly blobs?: Partial<BlobStore["Service"]>
    readonly published?: Array<ReadonlyArray<NewWorkflowEvent>>
    readonly retryOn?: typeof runner
    readonly scheduler?: Layer.Layer<Scheduler>
  } = {}
) =>
  Layer.mergeAll(
    Layer.mock(WorkflowRepository, { transition: store.transition, findById: (id) => Effect.succeed(Option.fromNullishOr(store.byId.get(id))) }),
    Layer.mock(RunnerGateway, gateway),
    Layer.mock(BlobStore, extra.blobs ?? {}),
    Layer.mock(WorkflowEventBus, extra.published === undefined ? {} : {
      publish: (_, events) => Effect.sync(() => void extra.published!.push(events)).pipe(Effect.as([]))
    }),
    Layer.mock(IdGenerator, { next: Effect.sync(() => Fixtures.uuid()) }),
    retryLayer(extra.retryOn === undefined ? undefined : { tier: "pro" })
  ).pipe(Layer.provideMerge(drivingLayer()), Layer.provideMerge(extra.scheduler ?? schedulerFor(extra.retryOn)))

const onRunner = (w: ReturnType<typeof workflowOn>) =>
  Effect.flatMap(Driving, ({ inFlight }) => inFlight.put({ workflow: headOf(w), phase: "onRunner" }))

const history = (over: Partial<PromptHistory>): PromptHistory => ({
  outcome: "success",
  outputs: [],
  started_at: 1_000,
  completed_at: 2_000,
  error: null,
  ...over
})

describe("Finish", () => {
  it.effect("copies the outputs, then records them with the end (and the steps it did not see) in one write, at the runner's times", () => {
    const w = workflowOn({ status: "queued" })
    const store = new FakeWorkflows([w])
    const stored: Array<string> = []
    return Effect.gen(function*() {
      yield* onRunner(w)
      yield* finish(w.id)
      expect(store.moves).toEqual(["Started+Completed"])
      expect(store.byId.get(w.id)).toMatchObject({
        status: "completed",
        started_at: DateTime.makeUnsafe(1_000),
        completed_at: DateTime.makeUnsafe(2_000)
      })
      const outputs = store.requests[0]!.outputs!
      expect(outputs.map((o) => [o.node_id, o.filename, o.content_type, o.size])).toEqual([["9", "out_00001_.png", "image/png", 3]])
      expect(stored).toEqual([outputs[0]!.blob_key])
    }).pipe(Effect.provide(layerFor(store, {
      history: () => Effect.succeed(Option.some(history({ outputs: [image] }))),
      download: () => Effect.succeed({ content_type: "image/png", content: Stream.make(new Uint8Array([1, 2, 3])) })
    }, {
      blobs: {
        // A download that streams is copied as it arrives, never held whole on the way.
        put: (key, content) => isBlobBytes(content) ? Effect.die(new Error("a streamed output was held in memory")) : Effect.map(Stream.runCollect(content), (chunks) => {
          stored.push(key)
          return Array.from(chunks).reduce((n, c) => n + c.length, 0)
        })
      }
    })))
  })

  it.effect("a small output the gateway read whole goes to the blob store as its bytes", () => {
    const w = workflowOn({ status: "running" })
    const store = new FakeWorkflows([w])
    const stored: Array<ReadonlyArray<Uint8Array>> = []
    return Effect.gen(function*() {
      yield* onRunner(w)
      yield* finish(w.id)
      expect(stored).toEqual([[new Uint8Array([1, 2]), new Uint8Array([3])]])
      expect(store.requests[0]!.outputs!.map((o) => [o.filename, o.size])).toEqual([["out_00001_.png", 3]])
    }).pipe(Effect.provide(layerFor(store, {
      history: () => Effect.succeed(Option.some(history({ outputs: [image] }))),
      download: () => Effect.succeed({ content_type: "image/png", content: [new Uint8Array([1, 2]), new Uint8Array([3])] })
    }, {
      blobs: {
        put: (_, content) =>
          isBlobBytes(content)
            ? Effect.sync(() => stored.push(content)).pipe(Effect.as(content.reduce((n, c) => n + c.length, 0)))
            : Effect.die(new Error("bytes in memory were put as a stream"))
      }
    })))
  })

  it.effect("an end the socket showed whole, without files, is one write: neither the runner nor its history is read", () => {
    const w = workflowOn({ status: "running", started_at: Fixtures.at(1) })
    const store = new FakeWorkflows([w])
    let resolves = 0
    const progress: NewWorkflowEvent = { type: "progress", data: { node: "2", value: 10, max: 10, percent: 100 } }
    // Any runner call would fail the test (Layer.mock dies on what it does not define).
    const layer = layerFor(store, {}, {
      scheduler: Layer.mock(Scheduler, { resolve: () => Effect.sync(() => resolves++).pipe(Effect.as(Option.some(runner))) })
    })
    return Effect.gen(function*() {
      yield* onRunner(w)
      yield* finish(w.id, ["onRunner"], [progress], history({}))
      expect(store.moves).toEqual(["Completed"])
      expect(store.byId.get(w.id)).toMatchObject({ status: "completed" })
      // The runner's record is read only to copy files from it.
      expect(resolves).toBe(0)
    }).pipe(Effect.provide(layer))
  })

  it.effect("fails a run whose outputs cannot be copied with OutputUnavailable, after retries", () => {
    const w = workflowOn({ status: "running" })
    const store = new FakeWorkflows([w])
    let downloads = 0
    return Effect.gen(function*() {
      yield* onRunner(w)
      const fiber = yield* Effect.forkChild(finish(w.id))
      yield* TestClock.adjust("5 seconds")
      yield* Fiber.join(fiber)
      expect(downloads).toBe(3)
      expect(store.byId.get(w.id)).toMatchObject({ status: "failed", exception_type: "OutputUnavailable" })
    }).pipe(Effect.provide(layerFor(store, {
      history: () => Effect.succeed(Option.some(history({ outputs: [image] }))),
      download: () => Effect.suspend(() => {
        downloads++
        return Effect.fail(new RunnerUnreachable({ runner_id: runner.id, message: "connection reset" }))
      })
    })))
  })

  it.effect("records the runner's node and exception of a failed run", () => {
    const w = workflowOn({ status: "running" })
    const store = new FakeWorkflows([w])
    return Effect.gen(function*() {
      yield* onRunner(w)
      yield* finish(w.id)
      expect(store.byId.get(w.id)).toMatchObject({
        status: "failed",
        error_node: "4",
        exception_type: "torch.OutOfMemoryError",
        exception_message: "CUDA out of memory"
      })
    }).pipe(Effect.provide(layerFor(store, {
      history: () =>
        Effect.succeed(Option.some(history({
          outcome: "error",
          error: { node_id: "4", exception_type: "torch.OutOfMemoryError", exception_message: "CUDA out of memory" }
        })))
    })))
  })

  it.effect("retries a run that ran out of memory on another runner, with the run it had recorded as an attempt", () => {
    const w = workflowOn({ status: "queued" })
    const other = { ...runner, id: Fixtures.uuid() as never, name: "bigger" }
    const store = new FakeWorkflows([w])
    return Effect.gen(function*() {
      yield* onRunner(w)
      yield* finish(w.id)
      expect(store.moves).toEqual(["Started+Retried"])
      expect(store.byId.get(w.id)).toMatchObject({ status: "accepted", user_runner_id: other.id, started_at: null, completed_at: null })
      expect(store.byId.get(w.id)!.attempts).toEqual([{
        runner_id: runner.id,
        runner_kind: "user",
        started_at: DateTime.makeUnsafe(1_000),
        ended_at: expect.anything(),
        error_node: "4",
        exception_type: "torch.cuda.OutOfMemoryError",
        exception_message: "CUDA out of memory"
      }])
      expect((yield* Effect.flatMap(Driving, (d) => d.inFlight.all))).toEqual([])
    }).pipe(Effect.provide(layerFor(store, {
      history: () =>
        Effect.succeed(Option.some(history({
          outcome: "error",
          error: { node_id: "4", exception_type: "torch.cuda.OutOfMemoryError", exception_message: "CUDA out of memory" }
        })))
    }, { retryOn: other })))
  })

  it.effect("without a history yet (read four times, 200 ms apart), leaves the workflow on the runner for reconciliation and still publishes its run events", () => {
    const w = workflowOn({ status: "running" })
    const store = new FakeWorkflows([w])
    const published: Array<ReadonlyArray<NewWorkflowEvent>> = []
    const run = [{ type: "executing" as const, data: { node: "1", percent: 0 } }]
    let reads = 0
    return Effect.gen(function*() {
      yield* onRunner(w)
      const fiber = yield* Effect.forkChild(finish(w.id, ["onRunner"], run))
      yield* TestClock.adjust("399 millis")
      expect(reads).toBe(2)
      yield* TestClock.adjust("1 second")
      yield* Fiber.join(fiber)
      expect(reads).toBe(4)
      expect(store.moves).toEqual([])
      expect(published).toEqual([run])
      const tracked = yield* Effect.flatMap(Driving, (d) => d.inFlight.get(w.id))
      expect(Option.map(tracked, (t) => t.phase)).toEqual(Option.some("onRunner"))
    }).pipe(Effect.provide(layerFor(store, { history: () => Effect.sync(() => reads++).pipe(Effect.as(Option.none())) }, { published })))
  })

  it.effect("an end the store could not write goes back to the runner's side, for reconciliation to record later", () => {
    const w = workflowOn({ status: "running" })
    return Effect.gen(function*() {
      yield* onRunner(w)
      const failed = yield* Effect.flip(finish(w.id))
      expect(failed._tag).toBe("StorageError")
      const tracked = yield* Effect.flatMap(Driving, (d) => d.inFlight.get(w.id))
      expect(Option.map(tracked, (t) => t.phase)).toEqual(Option.some("onRunner"))
    }).pipe(Effect.provide(
      Layer.mergeAll(
        Layer.mock(WorkflowRepository, { transition: () => Effect.fail(new StorageError({ message: "PostgreSQL store: connection terminated" })) }),
        Layer.mock(RunnerGateway, { history: () => Effect.succeed(Option.some(history({}))) }),
        Layer.mock(BlobStore, {}),
        Layer.mock(WorkflowEventBus, {}),
        Layer.mock(IdGenerator, {})
      , retryLayer()).pipe(Layer.provideMerge(drivingLayer()), Layer.provideMerge(schedulerFor()))
    ))
  })
})
