/**
 * Reading and knowing runners' capabilities. A read fetches `/object_info` (and
 * `/node_replacements`, which newer ComfyUI has), summarizes them and stores the summary; it also
 * probes the runner's ComfyUI again (`ObserveComfyUI.ts`: its version, its jobs API). It happens when a runner is created or moved to a new endpoint, when its
 * driver (re)connects (a ComfyUI restart may have added nodes or models), and for every active
 * runner at least every `refreshInterval` (a Schedule). A failed read is never an error: the
 * runner's capabilities stay what they were, or unknown, and an unknown runner stays eligible.
 * Scheduling reads summaries through a bounded per-instance cache (`cacheCapacity` runners,
 * each trusted for `cacheTtl`), so a create costs no statement for them while the cache is warm.
 */
import * as Cache from "effect/Cache"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import { ManagedRunnerRepository } from "../ports/ManagedRunnerRepository.js"
import { managedRunnerTarget, type RunnerTarget, userRunnerTarget } from "../domain/Runner.js"
import { type NodeReplacements, RunnerGateway } from "../ports/RunnerGateway.js"
import { observeComfyUI } from "./ObserveComfyUI.js"
import { RunnerRepository } from "../ports/RunnerRepository.js"
import type { Crypto } from "../domain/Crypto.js"
import type { StorageError } from "../domain/Errors.js"
import type { RunnerRef } from "../domain/Workflow.js"
import { CapabilityRepository, type StoredCapabilities } from "../ports/CapabilityRepository.js"
import { type CapabilityIndex, indexSummary } from "../domain/Needs.js"
import { summarize, summaryHash } from "../domain/Summary.js"
import { type CapabilitiesView, toCapabilitiesView } from "../domain/View.js"

/** A stored record with its lookup index. */
export interface KnownCapabilities {
  readonly record: StoredCapabilities
  readonly index: CapabilityIndex
}

export interface CapabilitiesOptions {
  /** Every active runner is read again at least this often (default 5 minutes). */
  readonly refreshInterval: Duration.Input
  /** Runners read per tick of the refresh, at most (default 100, 4 at a time). */
  readonly refreshBatch: number
  /** How long an instance trusts its cached copy of a runner's record (default 30 s). */
  readonly cacheTtl: Duration.Input
  /** Runners whose records an instance caches, at most (default 10 000). */
  readonly cacheCapacity: number
  /** A reconnection within this time of this instance's last read does not read again (default 10 s). */
  readonly minReadSpacing: Duration.Input
}

export const defaultCapabilitiesOptions: CapabilitiesOptions = {
  refreshInterval: Duration.minutes(5),
  refreshBatch: 100,
  cacheTtl: Duration.seconds(30),
  cacheCapacity: 10_000,
  minReadSpacing: Duration.seconds(10)
}

export class RunnerCapabilities extends Context.Service<RunnerCapabilities, {
  /**
   * Reads the runner's `/object_info` now and stores its summary. On failure what was known
   * stays, unless `forgetOnFailure` (a new endpoint), which makes it unknown. Never fails.
   */
  readonly read: (runner: RunnerTarget, options?: { readonly forgetOnFailure?: boolean }) => Effect.Effect<void>
  /** The driver (re)connected: reads, unless this instance read the runner within `minReadSpacing`. */
  readonly reconnected: (runner: RunnerTarget) => Effect.Effect<void>
  /** The runner is gone: its record goes too. */
  readonly forget: (runnerId: string) => Effect.Effect<void, StorageError>
  /**
   * The runners' capabilities as this instance knows them (cached), in the order asked; none:
   * unknown. Warm entries are read in place, without a fiber; the store is asked only for the
   * runners not cached (or expired), at most 8 at a time.
   */
  readonly lookupAll: (runnerIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<Option.Option<KnownCapabilities>>, StorageError>
  /** The summary's counts and hash, or null when unknown. */
  readonly view: (runnerId: string) => Effect.Effect<CapabilitiesView | null, StorageError>
}>()("@wes/core/RunnerCapabilities") {
  /** Reads through the gateway; the periodic refresh runs while the layer's scope is open. */
  static layer = (
    options: Partial<CapabilitiesOptions> = {}
  ): Layer.Layer<
    RunnerCapabilities,
    never,
    CapabilityRepository | RunnerGateway | RunnerRepository | ManagedRunnerRepository | Crypto
  > => Layer.effect(RunnerCapabilities, make({ ...defaultCapabilitiesOptions, ...options }))
}

const make = (options: CapabilitiesOptions) =>
  Effect.gen(function*() {
    const repo = yield* CapabilityRepository
    const gateway = yield* RunnerGateway
    const runners = yield* RunnerRepository
    const managed = yield* ManagedRunnerRepository
    const context = yield* Effect.context<Crypto | RunnerGateway | RunnerRepository | ManagedRunnerRepository>()
    const ttl = Duration.fromInputUnsafe(options.cacheTtl)
    const cache = yield* Cache.makeWith(
      (runnerId: string) =>
        Effect.map(repo.get(runnerId), Option.map((record): KnownCapabilities => ({ record, index: indexSummary(record.summary) }))),
      {
        capacity: options.cacheCapacity,
        // A failed store read is not kept: the next create asks the store again.
        timeToLive: (exit) => (Exit.isSuccess(exit) ? ttl : Duration.zero)
      }
    )
    /** `/node_replacements`, or none (the runner has no such route, or the read failed: logged). */
    const readReplacements = (runner: RunnerTarget): Effect.Effect<NodeReplacements | undefined> =>
      gateway.nodeReplacements(runner).pipe(
        Effect.map(Option.getOrUndefined),
        Effect.catch((e) =>
          Effect.as(Effect.logWarning("could not read the runner's node replacements", { runner_id: runner.id, error: e.message }), undefined))
      )
    /** When this instance last read each runner (ms), for `minReadSpacing`; bounded like the cache. */
    const lastRead = yield* Ref.make(new Map<string, number>())

    const read = (runner: RunnerTarget, readOptions: { readonly forgetOnFailure?: boolean } = {}) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* Ref.update(lastRead, (m) => {
          const next = new Map(m)
          next.delete(runner.id)
          next.set(runner.id, now)
          if (next.size > options.cacheCapacity) next.delete(next.keys().next().value!)
          return next
        })
        // The three reads at once; the probe stores what it found by itself.
        const [info, replacements] = yield* Effect.all([
          Effect.result(gateway.objectInfo(runner)),
          readReplacements(runner),
          observeComfyUI(runner).pipe(Effect.provide(context))
        ], { concurrency: 3 })
        if (info._tag === "Failure") {
          yield* Effect.logWarning("could not read the runner's capabilities; they stay as they were", {
            runner_id: runner.id,
            error: info.failure.message
          })
          if (readOptions.forgetOnFailure === true) {
            yield* repo.remove(runner.id)
            yield* Cache.set(cache, runner.id, Option.none())
          }
          return
        }
        const summary = summarize(info.success, replacements)
        const record: StoredCapabilities = {
          runner_id: runner.id,
          runner_kind: runner.kind,
          summary,
          hash: yield* Effect.provide(summaryHash(summary), context),
          read_at: yield* DateTime.now
        }
        yield* repo.put(record)
        yield* Cache.set(cache, runner.id, Option.some({ record, index: indexSummary(summary) }))
      }).pipe(
        Effect.catch((e) => Effect.logWarning("could not store the runner's capabilities", { runner_id: runner.id, error: e.message }))
      )

    const reconnected = (runner: RunnerTarget) =>
      Effect.gen(function*() {
        const last = (yield* Ref.get(lastRead)).get(runner.id)
        const now = yield* Clock.currentTimeMillis
        if (last !== undefined && now - last < Duration.toMillis(options.minReadSpacing)) return
        yield* read(runner)
      })

    const resolve = (ref: RunnerRef): Effect.Effect<Option.Option<RunnerTarget>, StorageError> =>
      ref.kind === "user"
        ? Effect.map(runners.findById(ref.id), Option.map(userRunnerTarget))
        : Effect.map(managed.findById(ref.id), Option.map(managedRunnerTarget))

    /** One tick: the runners not read for `refreshInterval` (or never), a batch of them. */
    const refreshDue = Effect.gen(function*() {
      const before = DateTime.subtractDuration(yield* DateTime.now, Duration.fromInputUnsafe(options.refreshInterval))
      const due = yield* repo.due(before, options.refreshBatch)
      yield* Effect.forEach(due, (ref) =>
        Effect.flatMap(resolve(ref), Option.match({ onNone: () => Effect.void, onSome: (t) => read(t) })), { concurrency: 4, discard: true })
    }).pipe(Effect.catch((e) => Effect.logWarning("could not refresh runners' capabilities", { error: e.message })))

    yield* refreshDue.pipe(
      Effect.repeat(Schedule.spaced(options.refreshInterval)),
      Effect.delay(options.refreshInterval),
      Effect.forkScoped
    )

    const lookupAll = (runnerIds: ReadonlyArray<string>) =>
      Effect.flatMap(Effect.forEach(runnerIds, (id) => Cache.getSuccess(cache, id)), (cached) => {
        const missing = runnerIds.filter((_, i) => Option.isNone(cached[i]!))
        const merged = (loaded: ReadonlyArray<Option.Option<KnownCapabilities>>) => {
          let next = 0
          return cached.map((c) => (Option.isSome(c) ? c.value : loaded[next++]!))
        }
        // Warm (almost always): no forEach over nothing.
        if (missing.length === 0) return Effect.succeed(merged([]))
        return Effect.map(Effect.forEach(missing, (id) => Cache.get(cache, id), { concurrency: Math.min(8, missing.length) }), merged)
      })

    return RunnerCapabilities.of({
      read,
      reconnected,
      forget: (runnerId) => Effect.andThen(repo.remove(runnerId), Cache.invalidate(cache, runnerId)),
      lookupAll,
      view: (runnerId) => Effect.map(Cache.get(cache, runnerId), Option.match({ onNone: () => null, onSome: (k) => toCapabilitiesView(k.record) }))
    })
  })
