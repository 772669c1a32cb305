/**
 * Core's `RunnerOwnership` as lease rows (`runner_leases`): each runner is driven by at most one
 * live instance. An instance takes a runner whose lease is free or expired in one upsert, keeps
 * it by renewing on a timer, and gives it up when the scope closes. If it dies, its leases
 * expire after `leaseTime` and another instance takes the runner over with a higher epoch, hence
 * a new WebSocket client id (ComfyUI silently unregisters a new socket that reuses a client id
 * whose old, half-open socket it has not noticed yet).
 *
 * Times are the database's (`now()`), so instances' clocks need not agree; an instance counts
 * its own deadline from before each renewal was sent, so it gives a runner up (`lost`) no later
 * than the database lets another instance take it.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { RunnerOwnership, StorageError } from "@wes/core"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Random from "effect/Random"
import { hostname } from "node:os"
import { isId, orStorageError, run } from "./Sql.js"

/** Options of the runner leases. */
export interface PgRunnerOwnershipOptions {
  /** This instance's name in leases and claims (default `wes-<host>-<pid>-<random>`); unique per live instance. */
  readonly instanceId?: string | undefined
  /** How long a lease lasts without renewal: how long a dead instance's runners wait (default 15 seconds). */
  readonly leaseTime?: Duration.Input | undefined
  /** How often a held lease is renewed, at most (default 5 seconds, jittered to 80-100 %; keep it well under `leaseTime`). */
  readonly renewInterval?: Duration.Input | undefined
}

/** A short name unique to this process and store instance: `wes-<host>-<pid>-<6 hex>`. */
export const makeInstanceId = (): string => {
  const host = hostname().split(".")[0]!.replace(/[^A-Za-z0-9-]/g, "").slice(0, 20) || "host"
  return `wes-${host}-${process.pid}-${globalThis.crypto.randomUUID().slice(0, 6)}`
}

/** The WebSocket client id of the `epoch`-th acquisition of a runner. */
export const runnerClientId = (runnerId: string, epoch: string): string => `wes-${runnerId}-${epoch}`

/** Milliseconds on `clock`'s monotonic time (hrtime): a wall-clock step cannot move a lease's local deadline. */
const millisOf = (clock: Clock.Clock): number => Number(clock.monotonicTimeNanosUnsafe() / 1_000_000n)
const monotonicMillis = Effect.map(Clock.Clock, millisOf)

/** What a held lease knows locally: by when (monotonic) it expires at the latest, and whether it was lost. */
interface LeaseState {
  deadline: number
  lost: boolean
}

/** The SQL of the leases, as statements (times are the database's). */
export const runnerLeaseQueries = (sql: SqlClient.SqlClient) => {
  const until = (leaseMs: number) => sql`now() + ${Math.max(0, Math.round(leaseMs))}::float8 * interval '1 millisecond'`
  return {
    /**
     * Inserts the lease, or takes the row over when it has expired or is already ours (a
     * leftover of an earlier acquisition of this instance); every acquisition bumps the epoch.
     * No row back: a live lease of another instance holds the runner.
     */
    acquire: (runnerId: string, owner: string, leaseMs: number) =>
      sql<{ epoch: string }>`INSERT INTO runner_leases AS l (runner_id, owner, epoch, expires_at)
        VALUES (${runnerId}, ${owner}, 1, ${until(leaseMs)})
        ON CONFLICT (runner_id) DO UPDATE
          SET owner = EXCLUDED.owner, epoch = l.epoch + 1, expires_at = EXCLUDED.expires_at
          WHERE l.expires_at < now() OR l.owner = EXCLUDED.owner
        RETURNING epoch::text AS epoch`,
    /** Extends the lease if it is still this acquisition's; no row back: it was taken over. */
    renew: (runnerId: string, owner: string, epoch: string, leaseMs: number) =>
      sql<{ epoch: string }>`UPDATE runner_leases SET expires_at = ${until(leaseMs)}
        WHERE runner_id = ${runnerId} AND owner = ${owner} AND epoch = ${epoch}::bigint
        RETURNING epoch::text AS epoch`,
    /** Expires the lease if it is still this acquisition's; the row stays, so epochs keep growing. */
    release: (runnerId: string, owner: string, epoch: string) =>
      sql`UPDATE runner_leases SET expires_at = '-infinity'
        WHERE runner_id = ${runnerId} AND owner = ${owner} AND epoch = ${epoch}::bigint`
  }
}

/**
 * The wait before a lease's next renewal: 80-100 % of `renewMs`, drawn each time, so that the
 * leases of runners taken together (a wave of work, a restart) drift apart instead of being
 * renewed in one burst every interval (B6's tail, docs/decisions.md). Never longer than asked.
 */
export const renewalSpacing = (renewMs: number): Effect.Effect<number> =>
  Effect.map(Random.next, (r) => renewMs * (0.8 + 0.2 * r))

/** The ownership on the `SqlClient` in context. */
export const makePgRunnerOwnership = (options: PgRunnerOwnershipOptions = {}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const q = runnerLeaseQueries(sql)
    const instanceId = options.instanceId ?? makeInstanceId()
    const leaseMs = Duration.toMillis(options.leaseTime ?? Duration.seconds(15))
    const renewMs = Duration.toMillis(options.renewInterval ?? Duration.seconds(5))
    const heldMargin = Math.min(2000, leaseMs / 5)

    /**
     * Renews every `renewMs` until the lease is taken over, or until renewals have failed up to
     * `deadline` (local time by which the database's lease has expired at the latest); then
     * completes `lost`.
     */
    const keep = (runnerId: string, epoch: string, state: LeaseState, lost: Deferred.Deferred<void>) =>
      Effect.gen(function*() {
        const log = { runner_id: runnerId, owner: instanceId, epoch }
        for (;;) {
          const deadline = state.deadline
          const now = yield* monotonicMillis
          if (now < deadline) yield* Effect.sleep(Duration.millis(Math.min(yield* renewalSpacing(renewMs), deadline - now)))
          const sent = yield* monotonicMillis
          if (sent >= state.deadline) {
            yield* Effect.logWarning("WES: lost a runner lease: it could not be renewed before it expired", log)
            break
          }
          const renewed = yield* run(q.renew(runnerId, instanceId, epoch, leaseMs)).pipe(
            orStorageError("runner lease renewal"),
            Effect.timeoutOrElse({
              duration: Duration.millis(state.deadline - sent),
              orElse: () =>
                Effect.fail(
                  new StorageError({ message: "PostgreSQL store: a runner lease renewal did not finish before the lease expired" })
                )
            }),
            Effect.result
          )
          if (Result.isFailure(renewed)) {
            yield* Effect.logWarning("WES: could not renew a runner lease; retrying", { ...log, error: renewed.failure.message })
          } else if (renewed.success.length === 0) {
            yield* Effect.logWarning("WES: lost a runner lease: another instance took the runner over", log)
            break
          } else {
            state.deadline = sent + leaseMs
          }
        }
        state.lost = true
        yield* Deferred.succeed(lost, undefined)
      })

    const release = (runnerId: string, epoch: string) =>
      run(q.release(runnerId, instanceId, epoch)).pipe(
        orStorageError("runner lease release"),
        // A failed statement, or the store's pool closed already (Effect 4's pool then interrupts
        // the statement): either way the lease expires on its own.
        Effect.catchCause((cause) =>
          Effect.logWarning("WES: could not release a runner lease; it expires on its own", {
            runner_id: runnerId,
            error: Cause.hasInterruptsOnly(cause) ? "the store is closed" : Cause.pretty(cause)
          })
        )
      )

    if (renewMs >= leaseMs) {
      yield* Effect.logWarning("WES: runner leases are renewed less often than they expire; every lease will be lost", {
        lease_ms: leaseMs,
        renew_ms: renewMs
      })
    }

    return RunnerOwnership.of({
      instanceId,
      acquire: (requested) =>
        Effect.gen(function*() {
          // PostgreSQL spells UUIDs in lowercase; one runner must be one row however it is spelled.
          const runnerId = isId(requested) ? requested.toLowerCase() : requested
          const started = yield* monotonicMillis
          // Uninterruptible with its release: a lease won, then interrupted, is still given back.
          const epoch = yield* Effect.acquireRelease(
            run(q.acquire(runnerId, instanceId, leaseMs)).pipe(
              Effect.map((rows) => Option.fromNullishOr(rows[0]?.epoch)),
              orStorageError("runner lease acquire")
            ),
            Option.match({ onNone: () => Effect.void, onSome: (e) => release(runnerId, e) })
          )
          if (Option.isNone(epoch)) return Option.none()
          const lost = yield* Deferred.make<void>()
          // The fiber's clock (a TestClock in tests), read synchronously: `held` is asked as a
          // prompt's request is written, outside any fiber.
          const clock = yield* Clock.Clock
          const state: LeaseState = { deadline: started + leaseMs, lost: false }
          // Forked after the release was registered, so it is stopped before the release runs.
          yield* Effect.forkScoped(keep(runnerId, epoch.value, state, lost))
          return Option.some({
            clientId: runnerClientId(runnerId, epoch.value),
            lost: Deferred.await(lost),
            // A margin before the local deadline covers the time a prompt takes to reach the runner.
            held: () => !state.lost && millisOf(clock) < state.deadline - heldMargin
          })
        })
    })
  })

/** `RunnerOwnership` on the `SqlClient` in context. */
export const layerPgRunnerOwnership = (
  options: PgRunnerOwnershipOptions = {}
): Layer.Layer<RunnerOwnership, never, SqlClient.SqlClient> => Layer.effect(RunnerOwnership, makePgRunnerOwnership(options))
