import { describe, expect, it } from "@effect/vitest"
import { AccountRepository, TierPolicy, BlobStore, Dispatcher, type DispatcherOptions, DispatchQueue, type RunnerEvent, type RunnerRef, RunnerGateway, RunnerOwnership, WAKE_ALL, WorkflowEventBus, WorkflowRepository } from "@wes/core"
import { IdGenerator } from "../../src/domain/Ids.js"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/testing/TestClock"
import { heldLease, RUNNER, schedulerFor, settle } from "./harness.js"

const ref: RunnerRef = { kind: "user", id: RUNNER as never }

/** The dispatcher over the store, queue, ownership and gateway a test arranges; every other service fails if called. */
const dispatcherOn = (
  options: Partial<DispatcherOptions>,
  arranged: {
    readonly repo: Partial<WorkflowRepository["Service"]>
    readonly queue: Partial<DispatchQueue["Service"]>
    readonly ownership: Pick<RunnerOwnership["Service"], "instanceId" | "acquire">
    readonly gateway?: Partial<RunnerGateway["Service"]>
  }
) =>
  Dispatcher.layer(options).pipe(
    Layer.provide(Layer.mergeAll(
      Layer.mock(WorkflowRepository, arranged.repo),
      Layer.mock(DispatchQueue, arranged.queue),
      Layer.mock(RunnerOwnership, arranged.ownership),
      Layer.mock(RunnerGateway, arranged.gateway ?? {}),
      Layer.mock(WorkflowEventBus, {}),
      Layer.mock(BlobStore, {}),
      Layer.mock(AccountRepository, {}),
      TierPolicy.layer({}),
      Layer.mock(IdGenerator, {}),
      schedulerFor()
    ))
  )

describe("Dispatcher", () => {
  it.effect("starts one driver per runner however many scans and wake-ups find it at once, and scans on a schedule", () => {
    const acquired: Array<string> = []
    let scans = 0
    const held = Effect.runSync(Deferred.make<void>())
    const layer = dispatcherOn({ scanInterval: "2 seconds" }, {
      repo: { unfinishedRunners: Effect.sync(() => scans++).pipe(Effect.as([ref])) },
      queue: { wakeups: Stream.make(RUNNER, RUNNER, "*") },
      // Taking the lease blocks: the driver is still starting while the others look.
      ownership: {
        instanceId: "instance-a",
        acquire: (id) => Effect.sync(() => acquired.push(id)).pipe(Effect.andThen(Deferred.await(held)), Effect.as(Option.none()))
      }
    })
    return Effect.gen(function*() {
      const dispatcher = yield* Dispatcher
      yield* Effect.all([dispatcher.scan, dispatcher.scan, dispatcher.scan], { concurrency: "unbounded" })
      yield* TestClock.adjust("4 seconds")
      expect(acquired).toEqual([RUNNER])
      expect(yield* dispatcher.driven).toEqual([RUNNER])
      // The scan repeats every scanInterval (plus the three asked for and the wake-ups that name no driven runner).
      expect(scans).toBeGreaterThanOrEqual(3 + 2)
    }).pipe(Effect.provide(layer))
  })

  it.effect("a scan leaves a running driver alone; a wake-up for its runner makes it claim", () => {
    const claims: Array<number> = []
    const wakeups = Effect.runSync(Queue.unbounded<string>())
    let scans = 0
    const layer = dispatcherOn({ scanInterval: "2 seconds", claimInterval: "1 hour", reconcileInterval: "1 hour", idleAfter: "1 hour" }, {
      repo: {
        unfinishedRunners: Effect.sync(() => scans++).pipe(Effect.as([ref])),
        countInFlight: () => Effect.succeed(new Map([[RUNNER, 1]]))
      },
      queue: {
        wakeups: Stream.fromQueue(wakeups),
        claim: () => Effect.as(Effect.sync(() => claims.push(scans)), [])
      },
      ownership: { instanceId: "instance-a", acquire: () => Effect.succeed(Option.some(heldLease)) },
      // The runner's socket stays quiet: nothing but claims happens.
      gateway: { events: () => Queue.unbounded<RunnerEvent>() }
    })
    return Effect.gen(function*() {
      const dispatcher = yield* Dispatcher
      yield* TestClock.adjust("10 millis")
      yield* settle
      expect(yield* dispatcher.driven).toEqual([RUNNER])
      const started = claims.length
      expect(started).toBeGreaterThan(0)
      // Five more scans find the runner: its driver runs, so none of them sets it claiming.
      yield* TestClock.adjust("10 seconds")
      expect(scans).toBeGreaterThanOrEqual(6)
      expect(claims).toHaveLength(started)
      // New work announced for the runner: it claims at once.
      yield* Queue.offer(wakeups, RUNNER)
      yield* TestClock.adjust("10 millis")
      yield* settle
      expect(claims).toHaveLength(started + 1)
    }).pipe(Effect.provide(layer))
  })

  it.effect("claims of dead instances: one read per claimInterval finds the driven runners with claimable work, and only their drivers claim", () => {
    const other: RunnerRef = { kind: "user", id: "0190a1b2-c3d4-7e5f-8a9b-00000000beef" as never }
    const claims = new Map<string, number>([[ref.id, 0], [other.id, 0]])
    const asked: Array<ReadonlyArray<string>> = []
    const wakeups = Effect.runSync(Queue.unbounded<string>())
    const layer = dispatcherOn({ scanInterval: "1 hour", claimInterval: "1 second", reconcileInterval: "1 hour", idleAfter: "1 hour" }, {
      repo: {
        unfinishedRunners: Effect.succeed([ref, other]),
        countInFlight: (ids) => Effect.succeed(new Map(ids.map((id) => [id, 1])))
      },
      queue: {
        wakeups: Stream.fromQueue(wakeups),
        claim: (runnerId) => Effect.as(Effect.sync(() => claims.set(runnerId, claims.get(runnerId)! + 1)), []),
        // Only the first runner has work a claim would take (a lapsed claim of a dead instance).
        claimable: (ids) => Effect.sync(() => asked.push([...ids].sort())).pipe(Effect.as(new Set([ref.id])))
      },
      ownership: { instanceId: "instance-a", acquire: () => Effect.succeed(Option.some(heldLease)) },
      gateway: { events: () => Queue.unbounded<RunnerEvent>() }
    })
    return Effect.gen(function*() {
      const dispatcher = yield* Dispatcher
      yield* TestClock.adjust("10 millis")
      yield* settle
      expect([...(yield* dispatcher.driven)].sort()).toEqual([ref.id, other.id].sort())
      const before = new Map(claims)
      const askedBefore = asked.length
      yield* TestClock.adjust("6 seconds")
      // About one read per second (jittered 0.8-1.2 s), each for both runners at once.
      const reads = asked.length - askedBefore
      expect(reads).toBeGreaterThanOrEqual(4)
      expect(reads).toBeLessThanOrEqual(8)
      expect(asked.every((ids) => ids.length === 2)).toBe(true)
      // Only the runner with claimable work claimed again, once per read; the other did not claim on a timer.
      expect(claims.get(ref.id)! - before.get(ref.id)!).toBe(reads)
      expect(claims.get(other.id)).toBe(before.get(other.id))
      // Any runner may have work (the store's listener reconnected): every driver claims.
      yield* Queue.offer(wakeups, WAKE_ALL)
      yield* TestClock.adjust("10 millis")
      yield* settle
      expect(claims.get(other.id)).toBe(before.get(other.id)! + 1)
    }).pipe(Effect.provide(layer))
  })
})
