/**
 * The dispatcher: finds runners with unfinished work and drives each one this instance owns
 * (RunnerDriver). Workflows move accepted -> uploaded -> queued -> running -> completed / failed /
 * invalid through it; cancels are the workflow service's.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type { AccountRepository } from "../accounts/AccountRepository.js"
import type { BlobStore } from "../shared/BlobStore.js"
import { DispatchQueue, RunnerOwnership } from "./Dispatch.js"
import type { IdGenerator } from "../shared/Ids.js"
import type { RunnerGateway } from "../runners/RunnerGateway.js"
import { defaultDispatcherOptions, type DispatcherOptions, driveRunner } from "./RunnerDriver.js"
import type { Scheduler } from "./Scheduler.js"
import type { Transactor } from "../shared/Transactor.js"
import type { RunnerRef } from "../workflows/Workflow.js"
import type { WorkflowEventBus } from "../workflows/WorkflowEvents.js"
import { WorkflowRepository } from "../workflows/WorkflowRepository.js"

export { defaultDispatcherOptions, type DispatcherOptions } from "./RunnerDriver.js"

export class Dispatcher extends Context.Tag("@wes/core/Dispatcher")<Dispatcher, {
  /** Runner ids this instance drives right now. */
  readonly driven: Effect.Effect<ReadonlyArray<string>>
  /** Looks for work now instead of at the next scan. */
  readonly scan: Effect.Effect<void>
}>() {
  /** Runs for the life of its scope; stopping it stops every driver (leases are released). */
  static layer = (
    options: Partial<DispatcherOptions> = {}
  ): Layer.Layer<
    Dispatcher,
    never,
    | WorkflowRepository
    | DispatchQueue
    | RunnerOwnership
    | WorkflowEventBus
    | BlobStore
    | Transactor
    | RunnerGateway
    | Scheduler
    | AccountRepository
    | IdGenerator
  > => Layer.scoped(Dispatcher, make({ ...defaultDispatcherOptions, ...options }))
}

const make = (options: DispatcherOptions) =>
  Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const queue = yield* DispatchQueue
    const ownership = yield* RunnerOwnership
    const scope = yield* Effect.scope
    const drivers = new Map<string, Queue.Queue<void>>()
    const logFailure = (what: string) => (e: { readonly message: string }) => Effect.logWarning(what, { error: e.message })

    const start = (ref: RunnerRef) =>
      Effect.gen(function*() {
        const existing = drivers.get(ref.id)
        if (existing !== undefined) return yield* Queue.offer(existing, undefined)
        const wake = yield* Queue.sliding<void>(1)
        drivers.set(ref.id, wake)
        yield* Effect.scoped(Effect.gen(function*() {
          const lease = yield* ownership.acquire(ref.id)
          if (Option.isNone(lease)) return
          yield* Effect.logDebug("driving runner", { runner_id: ref.id })
          yield* driveRunner(ref, ownership.instanceId, lease.value, wake, options)
        })).pipe(
          Effect.catchAllCause((cause) => Effect.logError("runner driver stopped", { runner_id: ref.id }, cause)),
          Effect.ensuring(Effect.sync(() => drivers.delete(ref.id))),
          Effect.forkIn(scope)
        )
      })

    const context = yield* Effect.context<Effect.Effect.Context<ReturnType<typeof driveRunner>>>()
    const scan = repo.unfinishedRunners.pipe(
      Effect.flatMap((refs) => Effect.forEach(refs, start, { discard: true })),
      Effect.catchAll(logFailure("could not look for work")),
      Effect.provide(context)
    )

    yield* scan.pipe(Effect.repeat(Schedule.spaced(options.scanInterval)), Effect.forkScoped)
    // New work for a runner: wake its driver, or start one.
    yield* queue.wakeups.pipe(
      Stream.runForEach((runnerId) => {
        const wake = drivers.get(runnerId)
        return wake === undefined ? scan : Queue.offer(wake, undefined)
      }),
      Effect.forkScoped
    )
    return Dispatcher.of({ driven: Effect.sync(() => Array.from(drivers.keys())), scan })
  })
