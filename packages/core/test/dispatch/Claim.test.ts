import { describe, expect, it } from "@effect/vitest"
import { AccountRepository, TierPolicy, BlobStore, type ClaimedWorkflow, DispatchQueue, RunnerGateway, WorkflowEventBus, WorkflowRepository } from "@wes/core"
import { IdGenerator } from "../../src/domain/Ids.js"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/testing/TestClock"
import { claimLoop, renewClaims } from "../../src/dispatch/Claim.js"
import { Driving } from "../../src/dispatch/Driving.js"
import { drivingLayer, FakeWorkflows, schedulerFor, workflowOn } from "./harness.js"

/** Waiting work the arranged `claim` hands out, oldest first, and the limit of every claim. */
class Waiting {
  readonly limits: Array<number> = []
  constructor(readonly left: Array<ReturnType<typeof workflowOn>>) {}
  readonly claim = (_runner: string, _owner: string, limit: number) =>
    Effect.sync((): ReadonlyArray<ClaimedWorkflow> => {
      this.limits.push(limit)
      return this.left.splice(0, limit).map((workflow) => ({ workflow, resubmit: false }))
    })
}

const layerFor = (
  store: FakeWorkflows,
  queue: Partial<DispatchQueue["Service"]>,
  gateway: Partial<RunnerGateway["Service"]>,
  repo: Partial<WorkflowRepository["Service"]> = {}
) =>
  Layer.mergeAll(
    Layer.mock(WorkflowRepository, { transition: store.transition, ...repo }),
    Layer.mock(DispatchQueue, queue),
    Layer.mock(RunnerGateway, gateway),
    Layer.mock(BlobStore, {}),
    Layer.mock(WorkflowEventBus, {}),
    Layer.mock(IdGenerator, {}),
    Layer.mock(AccountRepository, {}),
    TierPolicy.layer({})
  ).pipe(Layer.provideMerge(drivingLayer()), Layer.provideMerge(schedulerFor()))

describe("Claim", () => {
  it.effect("keeps at most concurrencyPerRunner prompts on the runner: claims what is free, and claims again when one ends", () => {
    const ws = Array.from({ length: 6 }, () => workflowOn())
    const store = new FakeWorkflows(ws)
    const waiting = new Waiting(ws.slice())
    const gate = Effect.runSync(Deferred.make<void>())
    const posted: Array<string> = []
    return Effect.gen(function*() {
      const driving = yield* Driving
      const loop = yield* Effect.forkChild(claimLoop)
      for (let i = 0; i < 50 && posted.length < 4; i++) yield* Effect.yieldNow
      // Four slots (concurrencyPerRunner): one claim of 4, all busy posting.
      expect(waiting.limits).toEqual([4])
      expect(posted).toHaveLength(4)
      yield* Deferred.succeed(gate, undefined)
      for (let i = 0; i < 100 && ws.slice(0, 4).some((w) => store.status(w.id) !== "queued"); i++) yield* Effect.yieldNow
      // Posted and queued on the runner: they still hold their slots, the other two wait in WES.
      expect(ws.slice(0, 4).every((w) => store.status(w.id) === "queued")).toBe(true)
      for (let i = 0; i < 50; i++) yield* Effect.yieldNow
      expect(posted).toHaveLength(4)
      expect(waiting.left).toHaveLength(2)
      // One ends (leaves the in-flight view): its slot is claimed again at once.
      yield* driving.inFlight.remove(ws[0]!.id)
      for (let i = 0; i < 100 && posted.length < 5; i++) yield* Effect.yieldNow
      expect(posted).toHaveLength(5)
      expect(waiting.limits.at(-1)).toBe(1)
      yield* Fiber.interrupt(loop)
    }).pipe(Effect.provide(layerFor(store, { claim: waiting.claim, release: () => Effect.void }, {
      submit: (_, p) =>
        Effect.sync(() => posted.push(p.prompt_id)).pipe(Effect.andThen(Deferred.await(gate)), Effect.as({ prompt_id: p.prompt_id, number: 1 }))
    })))
  })

  it.effect("stops once the runner has had nothing to do for idleAfter", () => {
    const store = new FakeWorkflows()
    const waiting = new Waiting([])
    return Effect.gen(function*() {
      const loop = yield* Effect.forkChild(claimLoop)
      yield* TestClock.adjust("9 seconds")
      expect(loop.pollUnsafe()).toBeUndefined()
      // Idleness is checked every third of idleAfter (10 s here), jittered: by 14 s it has stopped.
      yield* TestClock.adjust("5 seconds")
      expect(loop.pollUnsafe()).toBeDefined()
      // Idle, it claimed only at those checks, not every claimInterval (1 s): the dispatcher's
      // sweep finds lapsed claims for all its runners at once.
      expect(waiting.limits.length).toBeGreaterThanOrEqual(3)
      expect(waiting.limits.length).toBeLessThanOrEqual(6)
    }).pipe(Effect.provide(layerFor(store, { claim: waiting.claim }, {}, {
      countInFlight: (ids) => Effect.succeed(new Map(ids.map((id) => [id, 0])))
    })))
  })

  it.effect("keeps running while the runner still has unfinished work elsewhere in its queue", () => {
    const store = new FakeWorkflows()
    const waiting = new Waiting([])
    return Effect.gen(function*() {
      const loop = yield* Effect.forkChild(claimLoop)
      yield* TestClock.adjust("60 seconds")
      expect(loop.pollUnsafe()).toBeUndefined()
      yield* Fiber.interrupt(loop)
    }).pipe(Effect.provide(layerFor(store, { claim: waiting.claim }, {}, {
      countInFlight: (ids) => Effect.succeed(new Map(ids.map((id) => [id, 1])))
    })))
  })

  it.effect("renews the claims of the workflows being submitted every third of their lease", () => {
    const store = new FakeWorkflows()
    const renewed: Array<ReadonlyArray<string>> = []
    const w = workflowOn()
    return Effect.gen(function*() {
      const driving = yield* Driving
      yield* driving.inFlight.submitting(w, [])
      const fiber = yield* Effect.forkChild(renewClaims)
      yield* TestClock.adjust("9 seconds")
      expect(renewed).toEqual([[w.id]])
      yield* TestClock.adjust("1 second")
      expect(renewed).toEqual([[w.id], [w.id]])
      yield* driving.inFlight.remove(w.id)
      yield* TestClock.adjust("10 seconds")
      // Nothing being submitted: nothing to renew.
      expect(renewed).toHaveLength(2)
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(layerFor(store, {
      renew: (ids, owner, leaseMs) => {
        expect([owner, leaseMs]).toEqual(["instance-a", 30_000])
        return Effect.sync(() => void renewed.push(ids))
      }
    }, {})))
  })

  it.effect("wakes on its own every third of idleAfter, jittered, so drivers started together drift apart", () => {
    const store = new FakeWorkflows()
    const at: Array<number> = []
    return Effect.gen(function*() {
      const fiber = yield* Effect.forkChild(claimLoop)
      for (let i = 0; i < 1200; i++) yield* TestClock.adjust("50 millis")
      yield* Fiber.interrupt(fiber)
      const gaps = at.slice(2).map((t, i) => t - at[i + 1]!)
      expect(gaps.length).toBeGreaterThanOrEqual(12)
      // idleAfter is 10 s here: each wait is 0.8-1.2 x 3.33 s (to the 50 ms the clock moved by), and they differ.
      for (const gap of gaps) {
        expect(gap).toBeGreaterThanOrEqual(2650)
        expect(gap).toBeLessThanOrEqual(4050)
      }
      expect(new Set(gaps).size).toBeGreaterThan(3)
    }).pipe(Effect.provide(layerFor(store, {
      claim: () => Effect.as(Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sync(() => at.push(now))), [])
    }, {}, {
      // Work elsewhere in the runner's queue: the loop never goes idle.
      countInFlight: (ids) => Effect.succeed(new Map(ids.map((id) => [id, 1])))
    })))
  })
})
