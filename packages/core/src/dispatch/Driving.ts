/**
 * What the parts of one runner's driver share (claim, submit, track, reconcile, finish): the
 * runner and this instance's lease on it, the runner as last read (refreshed at most every
 * `runnerRefreshInterval`), its in-flight workflows, and the signals between the parts. Each part
 * is an effect that needs `Driving`, so a test provides one and drives the part alone.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Metric from "effect/Metric"
import type * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import { runnerInFlight } from "../usecases/Metrics.js"
import type { RunnerTarget } from "../domain/Runner.js"
import type { StorageError } from "../domain/Errors.js"
import type { RunnerRef } from "../domain/Workflow.js"
import type { RunnerLease } from "../ports/Dispatch.js"
import type { DispatcherOptions } from "./DispatcherOptions.js"
import { type InFlight, makeInFlight } from "./InFlight.js"
import { type LivePreviews, makeLivePreviews } from "./LivePreviews.js"
import type { Reach } from "./LostRunner.js"
import { Scheduler } from "../usecases/Scheduler.js"

export interface DrivingShape {
  readonly ref: RunnerRef
  /** This instance's name, the owner of its claims. */
  readonly owner: string
  readonly lease: RunnerLease
  readonly options: DispatcherOptions
  readonly inFlight: InFlight
  /** The runner as last read; `None` once it no longer exists. */
  readonly target: Effect.Effect<Option.Option<RunnerTarget>, StorageError>
  /** Reads the runner again now. */
  readonly refreshTarget: Effect.Effect<Option.Option<RunnerTarget>, StorageError>
  /** New work may be claimable (a wake-up from the dispatch queue). */
  readonly wake: Queue.Queue<void>
  /** A submission ended or a workflow left the runner: a slot may be free again. */
  readonly slotFreed: Queue.Queue<void>
  /** The runner's queue changed: positions are worth reading again. */
  readonly queueChanged: Queue.Queue<void>
  /** Compare everything in flight with the runner now (after a (re)connection). */
  readonly reconcileNow: Queue.Queue<void>
  /** Whether the runner answers, as reconciliation last found (LostRunner.ts). */
  readonly reach: Ref.Ref<Reach>
  /**
   * Done at the runner's first `Connected` (or `Disconnected`: the attempt failed). ComfyUI drops
   * the events of a client that is not connected, so a prompt posted before would run without a
   * live event (seen on a real ComfyUI: the first workflow of an idle runner); submissions wait for
   * it (`awaitSocket`).
   */
  readonly socketOpen: Deferred.Deferred<void>
  /**
   * Runs `effect` beside the part that calls it, for the life of the driver (a slow end of a
   * prompt must not hold up the events of the next); a failure is logged with `what`.
   */
  readonly fork: <R>(what: string, effect: Effect.Effect<void, { readonly message: string }, R>) => Effect.Effect<void, never, R>
  /** The previews of its workflows, published at most `PREVIEWS_PER_SECOND` each (LivePreviews.ts). */
  readonly previews: LivePreviews
}

export class Driving extends Context.Service<Driving, DrivingShape>()("@wes/core/Driving") {}

/** The shared state of a new driver of `ref`, reading the runner through the `Scheduler`. */
export const makeDriving = (
  ref: RunnerRef,
  owner: string,
  lease: RunnerLease,
  wake: Queue.Queue<void>,
  options: DispatcherOptions
): Effect.Effect<DrivingShape, never, Scheduler | Scope.Scope> =>
  Effect.gen(function*() {
    const scheduler = yield* Scheduler
    const refreshMs = Duration.toMillis(options.runnerRefreshInterval)
    const cache = yield* Ref.make<{ readonly at: number; readonly value: Option.Option<RunnerTarget> } | undefined>(undefined)
    const refreshTarget = Effect.gen(function*() {
      const value = yield* scheduler.resolve(ref)
      yield* Ref.set(cache, { at: yield* Clock.currentTimeMillis, value })
      return value
    })
    const target = Effect.gen(function*() {
      const cached = yield* Ref.get(cache)
      const now = yield* Clock.currentTimeMillis
      return cached !== undefined && now - cached.at < refreshMs ? cached.value : yield* refreshTarget
    })
    const background = yield* FiberSet.make<void, never>()
    const slotFreed = yield* Queue.sliding<void>(1)
    // The driver's series of the gauge, set synchronously with the context the driver was made in
    // (its metric registry). A metric made with its attributes caches its series key, where
    // `Metric.withAttributes` would merge them into the context on every update.
    const inFlightGauge = Metric.gauge(runnerInFlight.id, {
      description: runnerInFlight.description,
      attributes: { runner_kind: ref.kind, runner_id: ref.id }
    })
    const context = yield* Effect.context<never>()
    const setInFlight = (load: number) => inFlightGauge.updateUnsafe(load, context)
    yield* Effect.addFinalizer(() => Effect.sync(() => setInFlight(0)))
    // Started on the scheduler, as a fork: the caller goes on before `effect` runs.
    const fork = <R>(what: string, effect: Effect.Effect<void, { readonly message: string }, R>) =>
      Effect.asVoid(FiberSet.run(background, effect.pipe(
        Effect.catch((e) => Effect.logWarning(what, { runner_id: ref.id, error: e.message }))
      ), { startImmediately: false }))
    return {
      ref,
      owner,
      lease,
      options,
      // The gauge is set in the step that changed the load.
      inFlight: yield* makeInFlight(Queue.offer(slotFreed, undefined), setInFlight),
      target,
      refreshTarget,
      wake,
      slotFreed,
      queueChanged: yield* Queue.sliding<void>(1),
      reconcileNow: yield* Queue.sliding<void>(1),
      reach: yield* Ref.make<Reach>({ unreachableSince: undefined, watchUntil: undefined }),
      socketOpen: yield* Deferred.make<void>(),
      fork,
      previews: yield* makeLivePreviews
    }
  })

/** How long a submission waits for the runner's WebSocket to open, once per driver. */
export const SOCKET_WAIT = Duration.seconds(5)

/**
 * Waits until the runner's WebSocket is open (at most `SOCKET_WAIT`, after which nobody waits
 * again). Once open, a look at the Deferred: a timeout costs a fiber and a timer per call.
 */
export const awaitSocket = Effect.flatMap(Driving, ({ socketOpen }) =>
  Effect.flatMap(Deferred.isDone(socketOpen), (open) =>
    open ? Effect.void : Deferred.await(socketOpen).pipe(
      Effect.timeout(SOCKET_WAIT),
      Effect.catch(() => Deferred.succeed(socketOpen, undefined)),
      Effect.asVoid
    )))
