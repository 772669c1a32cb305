import { describe, expect, it } from "@effect/vitest"
import { BlobStore, type PromptHistory, RunnerGateway, WorkflowEventBus, WorkflowRepository, WorkflowTransition } from "@wes/core"
import { IdGenerator } from "../../src/domain/Ids.js"
import { Fixtures } from "@wes/core/testing"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/testing/TestClock"
import { Driving } from "../../src/dispatch/Driving.js"
import { stepsTo } from "../../src/dispatch/QueuePositions.js"
import { reconcile, reconcileLoop } from "../../src/dispatch/Reconcile.js"
import { drivingLayer, FakeWorkflows, headOf, runner, schedulerFor, workflowOn, retryLayer } from "./harness.js"

const finished: PromptHistory = { outcome: "success", outputs: [], started_at: 1_000, completed_at: 2_000, error: null }

const layerFor = (
  store: FakeWorkflows,
  gateway: Partial<RunnerGateway["Service"]>,
  retry: { readonly tier: "free" | "pro"; readonly next: typeof runner } | undefined = undefined
) =>
  Layer.mergeAll(
    Layer.mock(WorkflowRepository, {
      transition: store.transition,
      findById: (id) => Effect.succeed(Option.fromNullishOr(store.byId.get(id))),
      listSubmittedOnRunner: () =>
        Effect.succeed(Array.from(store.byId.values()).filter((w) =>
          (w.status === "queued" || w.status === "running" || (w.status !== "cancelled" && w.submitted_at !== null)) &&
          w.user_runner_id === runner.id
        ).map(headOf))
    }),
    Layer.mock(RunnerGateway, gateway),
    Layer.mock(WorkflowEventBus, {}),
    Layer.mock(BlobStore, {}),
    Layer.mock(IdGenerator, {}),
    retryLayer(retry === undefined ? undefined : { tier: retry.tier })
  ).pipe(Layer.provideMerge(drivingLayer()), Layer.provideMerge(schedulerFor(retry?.next)))

describe("Reconcile", () => {
  it.effect("compares what may be on the runner with its queue and history: position, end, lost, or left to the claims", () => {
    const waiting = workflowOn({ status: "queued", prompt_id: "x", queue_number: 1 })
    const ended = workflowOn({ status: "running", started_at: Fixtures.at(1) })
    const lost = workflowOn({ status: "queued", queue_number: 3 })
    const claimedOnly = workflowOn({ status: "accepted", submitted_at: Fixtures.at(2) })
    const store = new FakeWorkflows([waiting, ended, lost, claimedOnly])
    return Effect.gen(function*() {
      yield* reconcile
      expect(store.byId.get(waiting.id)).toMatchObject({ status: "queued", queue_number: 2 })
      expect(store.byId.get(ended.id)).toMatchObject({ status: "completed" })
      expect(store.byId.get(lost.id)).toMatchObject({ status: "failed", exception_type: "RunnerLost" })
      // Claimed by an instance that died before posting: the claim loop submits it again, no write here.
      expect(store.byId.get(claimedOnly.id)).toMatchObject({ status: "accepted" })
      expect(store.moves.sort()).toEqual(["Completed", "Failed", "QueueMoved"])
      // What ended is no longer tracked; what is on the runner is.
      const tracked = (yield* Effect.flatMap(Driving, (d) => d.inFlight.all)).map((t) => t.workflow.id)
      expect(tracked).toEqual([waiting.id])
    }).pipe(Effect.provide(layerFor(store, {
      queue: () => Effect.succeed({ running: ["someone else's"], pending: ["another", waiting.id] }),
      history: (_, id) => Effect.succeed(id === ended.id ? Option.some(finished) : Option.none())
    })))
  })

  it.effect("a lost run is retried on another runner once: back to accepted there, the attempt recorded, no longer tracked here", () => {
    const other = { ...runner, id: Fixtures.uuid() as never, name: "other" }
    const lost = workflowOn({ status: "running", prompt_id: "p", started_at: Fixtures.at(1), submitted_at: Fixtures.at(0) })
    const lostAgain = workflowOn({
      status: "queued",
      attempts: [{ runner_id: other.id, runner_kind: "user", started_at: null, ended_at: Fixtures.at(0), error_node: null, exception_type: "RunnerLost", exception_message: "lost" }]
    })
    const store = new FakeWorkflows([lost, lostAgain])
    return Effect.gen(function*() {
      yield* reconcile
      expect(store.byId.get(lost.id)).toMatchObject({ status: "accepted", user_runner_id: other.id, prompt_id: null, started_at: null, submitted_at: null })
      expect(store.byId.get(lost.id)!.attempts).toMatchObject([{ runner_id: runner.id, exception_type: "RunnerLost", started_at: Fixtures.at(1) }])
      // The tier's one retry is used up: the failure stands.
      expect(store.byId.get(lostAgain.id)).toMatchObject({ status: "failed", exception_type: "RunnerLost" })
      expect((yield* Effect.flatMap(Driving, (d) => d.inFlight.all))).toEqual([])
    }).pipe(Effect.provide(layerFor(store, {
      queue: () => Effect.succeed({ running: [], pending: [] }),
      history: () => Effect.succeed(Option.none())
    }, { tier: "pro", next: other })))
  })

  it.effect("a prompt posted while the runner's queue was being read is not taken for lost", () => {
    // Its post answered after the runner answered /queue: the runner had it, the snapshot could not.
    const late = workflowOn({ status: "queued", prompt_id: "late", queue_number: 1, submitted_at: Fixtures.at(0) })
    const store = new FakeWorkflows([])
    let duringQueueRead: Effect.Effect<void> = Effect.void
    return Effect.gen(function*() {
      const driving = yield* Driving
      duringQueueRead = Effect.sync(() => void store.byId.set(late.id, late)).pipe(
        Effect.andThen(driving.inFlight.put({ workflow: headOf(late), phase: "onRunner" }))
      )
      yield* reconcile
      expect(store.byId.get(late.id)).toMatchObject({ status: "queued" })
      expect(store.moves).toEqual([])
      expect((yield* driving.inFlight.all).map((t) => t.workflow.id)).toEqual([late.id])
    }).pipe(Effect.provide(layerFor(store, {
      queue: () => Effect.suspend(() => duringQueueRead).pipe(Effect.as({ running: [], pending: [] })),
      history: () => Effect.succeed(Option.none())
    })))
  })

  it.effect("a prompt adopted from the store and posted again while the runner's queue was being read is not taken for lost", () => {
    // Claimed by an instance that died before posting: adopted, then claimed and posted by this one.
    const adopted = workflowOn({ status: "accepted", submitted_at: Fixtures.at(0) })
    const posted = { ...adopted, status: "queued" as const, prompt_id: adopted.id, queue_number: 1 }
    const store = new FakeWorkflows([adopted])
    let duringQueueRead: Effect.Effect<void> = Effect.void
    return Effect.gen(function*() {
      const driving = yield* Driving
      yield* driving.inFlight.put({ workflow: headOf(adopted), phase: "onRunner" })
      duringQueueRead = Effect.gen(function*() {
        yield* driving.inFlight.submitting(headOf(adopted), [])
        store.byId.set(posted.id, posted)
        yield* driving.inFlight.refresh(headOf(posted))
        yield* driving.inFlight.shift(posted.id, ["submitting"], "onRunner")
      })
      yield* reconcile
      expect(store.byId.get(posted.id)).toMatchObject({ status: "queued" })
      expect(store.moves).toEqual([])
      expect((yield* driving.inFlight.all).map((t) => t.workflow.id)).toEqual([posted.id])
    }).pipe(Effect.provide(layerFor(store, {
      queue: () => Effect.suspend(() => duringQueueRead).pipe(Effect.as({ running: [], pending: [] })),
      history: () => Effect.succeed(Option.none())
    })))
  })

  it.effect("removes from the runner's queue the prompt of a workflow cancelled while the runner could not be told", () => {
    const cancelled = workflowOn({ status: "cancelled", completed_at: Fixtures.at(3) })
    const store = new FakeWorkflows([cancelled])
    const removed: Array<string> = []
    return Effect.gen(function*() {
      yield* reconcile
      expect(removed).toEqual([cancelled.id])
      expect(store.moves).toEqual([])
    }).pipe(Effect.provide(layerFor(store, {
      queue: () => Effect.succeed({ running: [], pending: [cancelled.id] }),
      cancel: (_, id) => Effect.sync(() => void removed.push(id))
    })))
  })

  it.effect("reconciles every reconcileInterval, jittered, so drivers started together drift apart", () => {
    const at: Array<number> = []
    // Nothing on the runner: each reconciliation is one read of its queue (reconcileInterval 5 s).
    const layer = layerFor(new FakeWorkflows([]), {
      queue: () => Effect.as(Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => at.push(now))), { running: [], pending: [] })
    })
    return Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(reconcileLoop)
      for (let i = 0; i < 1200; i++) yield* TestClock.adjust("50 millis")
      yield* Fiber.interrupt(fiber)
      // Once at the start, then every 4-6 s (to the 50 ms the clock moved by), each wait its own.
      expect(at[0]).toBe(0)
      const gaps = at.slice(1).map((t, i) => t - at[i]!)
      expect(gaps.length).toBeGreaterThanOrEqual(9)
      for (const gap of gaps) {
        expect(gap).toBeGreaterThanOrEqual(3950)
        expect(gap).toBeLessThanOrEqual(6050)
      }
      expect(new Set(gaps).size).toBeGreaterThan(3)
    }).pipe(Effect.provide(layer))
  })
})

describe("QueuePositions.stepsTo", () => {
  const at = Fixtures.at(9)
  const head = (over: Parameters<typeof workflowOn>[0]) => headOf(workflowOn(over))
  it("walks a workflow the driver last saw earlier to where the runner has it, in one chain", () => {
    const tags = (w: ReturnType<typeof head>, position: number) => stepsTo(w, position, at)?.map((s) => s._tag)
    expect(tags(head({ status: "accepted" }), 0)).toEqual(["Uploaded", "Queued", "Started"])
    expect(tags(head({ status: "uploaded" }), 0)).toEqual(["Queued", "Started"])
    expect(tags(head({ status: "queued" }), 0)).toEqual(["Started"])
    expect(tags(head({ status: "running" }), 0)).toBeUndefined()
    expect(tags(head({ status: "accepted" }), 3)).toEqual(["Uploaded", "Queued"])
    expect(tags(head({ status: "queued", queue_number: 3 }), 3)).toBeUndefined()
    expect(stepsTo(head({ status: "queued", queue_number: 3 }), 1, at)).toEqual([WorkflowTransition.QueueMoved({ queue_number: 1 })])
    expect(tags(head({ status: "completed" }), 0)).toBeUndefined()
  })
})
