import { describe, expect, it } from "@effect/vitest"
import { BlobStore, RunnerGateway, WorkflowEventBus, WorkflowRepository } from "@wes/core"
import { IdGenerator } from "../../src/domain/Ids.js"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as TestClock from "effect/testing/TestClock"
import { Driving } from "../../src/dispatch/Driving.js"
import { refreshPositions } from "../../src/dispatch/QueuePositions.js"
import { drivingLayer, FakeWorkflows, headOf, retryLayer, schedulerFor, workflowOn } from "./harness.js"

const success = { outcome: "success" as const, outputs: [], started_at: 1_000, completed_at: 2_000, error: null }
const empty = { running: [], pending: [] }

const layerFor = (store: FakeWorkflows, gateway: Partial<RunnerGateway["Service"]>) =>
  Layer.mergeAll(
    Layer.mock(WorkflowRepository, { transition: store.transition }),
    Layer.mock(RunnerGateway, gateway),
    Layer.mock(WorkflowEventBus, {}),
    Layer.mock(BlobStore, {}),
    Layer.mock(IdGenerator, {}),
    retryLayer()
  ).pipe(Layer.provideMerge(drivingLayer({ options: { queueRefreshInterval: "250 millis" } })), Layer.provideMerge(schedulerFor()))

/** Lets the forked loop run until `done` holds. */
const eventually = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200 && !done(); i++) yield* Effect.yieldNow
    expect(done()).toBe(true)
  })

/** Reads the loop made of the runner. */
interface Reads {
  queue: number
  history: number
}

/** A gateway whose queue answers `snapshot` and whose history has every prompt ended, counting reads. */
const counting = (reads: Reads, snapshot: { readonly running: ReadonlyArray<string>; readonly pending: ReadonlyArray<string> } = empty) => ({
  queue: () => Effect.sync(() => reads.queue++).pipe(Effect.as(snapshot)),
  history: () => Effect.sync(() => reads.history++).pipe(Effect.as(Option.some(success)))
})

/** Puts `workflows` on the runner as this driver's, starts the loop, and lets it read the queue once. */
const afterFirstRead = (workflows: ReadonlyArray<ReturnType<typeof workflowOn>>, reads: Reads) =>
  Effect.gen(function*() {
    const driving = yield* Driving
    for (const w of workflows) yield* driving.inFlight.put({ workflow: headOf(w), phase: "onRunner" })
    yield* Effect.forkScoped(refreshPositions)
    yield* Queue.offer(driving.queueChanged, undefined)
    yield* eventually(() => reads.queue === 1)
    return driving
  })

describe("QueuePositions", () => {
  it.effect("a prompt missing from two reads of the queue, an interval apart, ends from its history", () => {
    const w = workflowOn({ status: "running" })
    const store = new FakeWorkflows([w])
    const reads: Reads = { queue: 0, history: 0 }
    return Effect.gen(function*() {
      yield* afterFirstRead([w], reads)
      // Once missing: maybe ended and not yet said on the socket. No history read yet.
      expect(reads.history).toBe(0)
      expect(store.status(w.id)).toBe("running")
      // The loop looks again after the interval without a queue change.
      yield* TestClock.adjust("250 millis")
      yield* eventually(() => store.status(w.id) === "completed")
      expect([reads.queue, reads.history]).toEqual([2, 1])
    }).pipe(Effect.provide(layerFor(store, counting(reads))))
  })

  it.effect("a prompt the socket ends between the two reads costs no history read", () => {
    const w = workflowOn({ status: "running" })
    const store = new FakeWorkflows([w])
    const reads: Reads = { queue: 0, history: 0 }
    return Effect.gen(function*() {
      const driving = yield* afterFirstRead([w], reads)
      for (let i = 0; i < 50; i++) yield* Effect.yieldNow
      // The socket's end took it (Track.ts): it is no longer on the runner for this driver.
      yield* driving.inFlight.shift(w.id, ["onRunner"], "finishing")
      yield* TestClock.adjust("250 millis")
      for (let i = 0; i < 50; i++) yield* Effect.yieldNow
      // Nothing of this driver's is left on the runner: no second read, no history read, no write.
      expect([reads.queue, reads.history]).toEqual([1, 0])
      expect(store.requests).toEqual([])
      expect(store.status(w.id)).toBe("running")
    }).pipe(Effect.provide(layerFor(store, counting(reads))))
  })

  it.effect("a prompt still queued or running gets its position, and nothing is finished", () => {
    const running = workflowOn({ status: "queued", queue_number: 1 })
    const waiting = workflowOn({ status: "queued", queue_number: 1 })
    const store = new FakeWorkflows([running, waiting])
    const reads: Reads = { queue: 0, history: 0 }
    return Effect.gen(function*() {
      yield* afterFirstRead([running, waiting], reads)
      yield* eventually(() => store.status(running.id) === "running" && store.byId.get(waiting.id)?.queue_number === 2)
      expect(store.moves.sort()).toEqual(["QueueMoved", "Started"])
      // Nothing was missing: no second look without a queue change.
      yield* TestClock.adjust("1 second")
      expect(reads.queue).toBe(1)
    }).pipe(Effect.provide(layerFor(store, counting(reads, { running: [running.id], pending: ["other", waiting.id] }))))
  })
})
