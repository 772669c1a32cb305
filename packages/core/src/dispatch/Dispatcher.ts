/**
 * The dispatcher: finds runners with unfinished work (a scan every `scanInterval`, and at once on
 * a wake-up from the dispatch queue) and drives each one this instance owns, one driver per
 * runner in a `FiberMap`. Workflows move accepted -> uploaded -> queued -> running -> completed /
 * failed / invalid through the drivers; cancels are the workflow service's.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type { AccountRepository } from "../ports/AccountRepository.js"
import type { TierPolicy } from "../domain/Tier.js"
import type { RunnerGateway } from "../ports/RunnerGateway.js"
import type { BlobStore } from "../ports/BlobStore.js"
import type { IdGenerator } from "../domain/Ids.js"
import type { RunnerRef } from "../domain/Workflow.js"
import type { WorkflowEventBus } from "../ports/WorkflowEvents.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"
import { DispatchQueue, RunnerOwnership, WAKE_ALL } from "../ports/Dispatch.js"
import { defaultDispatcherOptions, type DispatcherOptions } from "./DispatcherOptions.js"
import { driveRunner } from "./Driver.js"
import type { Scheduler } from "../usecases/Scheduler.js"

export { defaultDispatcherOptions, type DispatcherOptions } from "./DispatcherOptions.js"

/** What drivers need from the rest of the system. */
export type DispatcherDeps =
  | WorkflowRepository
  | DispatchQueue
  | RunnerOwnership
  | WorkflowEventBus
  | BlobStore
  | RunnerGateway
  | Scheduler
  | AccountRepository
  | TierPolicy
  | IdGenerator

export class Dispatcher extends Context.Service<Dispatcher, {
  /** Runner ids this instance drives right now. */
  readonly driven: Effect.Effect<ReadonlyArray<string>>
  /** Looks for work now instead of at the next scan. */
  readonly scan: Effect.Effect<void>
}>()("@wes/core/Dispatcher") {
  /** Runs for the life of its scope; stopping it stops every driver (leases are released). */
  static layer = (options: Partial<DispatcherOptions> = {}): Layer.Layer<Dispatcher, never, DispatcherDeps> =>
    Layer.effect(Dispatcher, make({ ...defaultDispatcherOptions, ...options }))
}

const make = (options: DispatcherOptions) =>
  Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const queue = yield* DispatchQueue
    const ownership = yield* RunnerOwnership
    const context = yield* Effect.context<DispatcherDeps>()
    const drivers = yield* FiberMap.make<string>()
    /** The wake-up queue of each driver that runs. */
    const wakes = yield* Ref.make(HashMap.empty<string, Queue.Queue<void>>())

    const drive = (ref: RunnerRef, wake: Queue.Queue<void>) =>
      Effect.scoped(Effect.gen(function*() {
        const lease = yield* ownership.acquire(ref.id)
        if (Option.isNone(lease)) return
        yield* Effect.logDebug("driving runner", { runner_id: ref.id })
        yield* driveRunner(ref, ownership.instanceId, lease.value, wake, options)
      })).pipe(
        Effect.catchCause((cause) => Effect.logError("runner driver stopped", { runner_id: ref.id }, cause)),
        Effect.ensuring(Ref.update(wakes, HashMap.remove(ref.id as string))),
        Effect.provide(context)
      )

    /**
     * Starts a driver for `ref` unless one runs (atomically: two scans at once start one driver,
     * with one wake-up queue). A running driver is not woken: it claims on the wake-ups of its
     * runner and when `sweep` finds work for it, so a scan of many runners does not set every
     * driver claiming at the same instant.
     */
    const start = (ref: RunnerRef) =>
      Effect.gen(function*() {
        const fresh = yield* Queue.sliding<void>(1)
        const wake = yield* Ref.modify(wakes, (map) => {
          const existing = HashMap.get(map, ref.id as string)
          return Option.isSome(existing) ? [existing.value, map] : [fresh, HashMap.set(map, ref.id as string, fresh)]
        })
        if (wake === fresh) yield* FiberMap.run(drivers, ref.id as string, drive(ref, wake), { startImmediately: false })
      })

    const scan = repo.unfinishedRunners.pipe(
      Effect.flatMap((refs) => Effect.forEach(refs, start, { discard: true })),
      Effect.catch((e) => Effect.logWarning("could not look for work", { error: e.message }))
    )

    /**
     * Claims of a dead instance lapse without a wake-up. Every `claimInterval` (jittered), one read
     * for all the runners this instance drives finds those with claimable work, and only their
     * drivers claim: an instance driving N runners spends one statement per interval on this, not N.
     */
    const sweep = Effect.gen(function*() {
      const map = yield* Ref.get(wakes)
      if (HashMap.size(map) === 0) return
      const ready = yield* queue.claimable(Array.from(HashMap.keys(map)))
      for (const id of ready) {
        const wake = HashMap.get(map, id)
        if (Option.isSome(wake)) yield* Queue.offer(wake.value, undefined)
      }
    }).pipe(Effect.catch((e) => Effect.logWarning("could not look for claimable work", { error: e.message })))
    const wakeAll = Effect.flatMap(Ref.get(wakes), (map) => Effect.forEach(HashMap.values(map), (wake) => Queue.offer(wake, undefined), { discard: true }))

    yield* scan.pipe(Effect.repeat(Schedule.spaced(options.scanInterval)), Effect.forkScoped)
    yield* sweep.pipe(Effect.repeat(Schedule.spaced(options.claimInterval).pipe(Schedule.jittered)), Effect.forkScoped)
    // New work for a runner: wake its driver, or look for work (the runner id alone does not say
    // its kind). Any runner may have work (the store's listener reconnected): wake every driver too.
    yield* queue.wakeups.pipe(
      Stream.runForEach((runnerId) =>
        runnerId === WAKE_ALL
          ? Effect.andThen(wakeAll, scan)
          : Effect.flatMap(Ref.get(wakes), (map) =>
            Option.match(HashMap.get(map, runnerId), { onNone: () => scan, onSome: (wake) => Effect.asVoid(Queue.offer(wake, undefined)) })
          )
      ),
      Effect.forkScoped
    )
    return Dispatcher.of({ driven: Effect.map(Ref.get(wakes), (map) => Array.from(HashMap.keys(map))), scan })
  })
