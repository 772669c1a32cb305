/**
 * ONE `LISTEN` connection per store, shared by every channel the store listens on (workflow
 * events, dispatch wake-ups, webhooks), with a heartbeat and reconnection.
 *
 * NOTIFY is only a wake-up here: whoever is woken reads the database. A notification can
 * therefore be lost without losing anything, as long as everyone looks again after the loss; so
 * after every (re)connection each channel's `onConnected` runs.
 *
 * The connection is the listener's own (`PgConnection`, on the `PgClient`'s settings), not one
 * per channel as `PgClient.listen` takes: one connection carries every channel. The driver fails
 * each channel's queue as soon as the connection errors or closes, which ends the session at
 * once, and it reconnects after a short backoff. The heartbeat stays for what the driver cannot
 * see (a connection that went silent without a reset): a ping sent with `pg_notify` through the
 * pool must come back on the LISTEN connection within the timeout.
 *
 * Notifications wait in each channel's queue, which has no bound (the driver pushes them); each
 * is handled in O(1), so it drains as fast as it fills.
 */
import { PgClient, PgConnection } from "@effect/sql-pg"
import { StorageError } from "@wes/core"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { orStorageError } from "./Sql.js"

/** Heartbeat settings of the LISTEN connection. */
export interface PgListenOptions {
  /** How often the LISTEN connection is checked with a ping through the database (default 10 seconds). */
  readonly heartbeatInterval?: Duration.Input | undefined
  /** How long a ping may take before the LISTEN connection counts as lost (default 5 seconds). */
  readonly heartbeatTimeout?: Duration.Input | undefined
}

/** A channel the listener follows, and what to do with it. */
export interface ListenChannel {
  readonly channel: string
  /** Handles a payload (never a heartbeat). Runs on the listener's fiber: it must be quick. */
  readonly onPayload: (payload: string) => Effect.Effect<void>
  /** Runs after every confirmed (re)connection: what was announced while nobody listened must be looked at again. */
  readonly onConnected: Effect.Effect<void>
}

/** Payloads that start with this are heartbeats, not workflow or runner ids. */
const PING_PREFIX = "wes-ping:"
/**
 * How long a ping on a new connection may take before it is sent again (the LISTENs are confirmed
 * before it goes out, but one lost ping must not cost a whole heartbeat timeout).
 */
const FIRST_PING_WAIT = Duration.millis(100)
/** Delay before reconnecting after the n-th consecutive failure: 100 ms doubling up to 5 s. */
const backoff = (failures: number): Duration.Duration => Duration.millis(Math.min(5_000, 100 * 2 ** Math.min(failures - 1, 6)))

const lost = (what: string) => (e: unknown) =>
  new StorageError({ message: `PostgreSQL store: the LISTEN connection ${what}${e instanceof Error ? `: ${e.message}` : ""}` })

/**
 * A connection of the listener's own, on the client's settings, pinned (its channels share it)
 * for the life of the scope; unprepared (it runs LISTEN only).
 */
const connection = (config: PgClient.PgClientConfig): Effect.Effect<PgConnection.PgConnection, StorageError, Scope.Scope> =>
  PgConnection.make({ ...config, prepare: false }).pipe(
    Effect.flatMap((c) => c.pin),
    Effect.mapError(lost("could not be opened"))
  )

/** How often the LISTEN connection is pinged when `heartbeatInterval` is not given. */
export const DEFAULT_HEARTBEAT_INTERVAL = Duration.seconds(10)

/** Listens on `channels` for the life of the scope, reconnecting whenever the connection is lost. */
export const startListener = (
  channels: ReadonlyArray<ListenChannel>,
  options: PgListenOptions = {}
): Effect.Effect<void, never, PgClient.PgClient | Scope.Scope> =>
  Effect.gen(function*() {
    const pg = yield* PgClient.PgClient
    const interval = Duration.fromInputUnsafe(options.heartbeatInterval ?? DEFAULT_HEARTBEAT_INTERVAL)
    const timeout = Duration.fromInputUnsafe(options.heartbeatTimeout ?? Duration.seconds(5))
    const instance = globalThis.crypto.randomUUID()

    let pings = 0
    let awaited: { readonly payload: string; readonly received: Deferred.Deferred<void> } | undefined

    const onNotification = (channel: ListenChannel, payload: string): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (payload.startsWith(PING_PREFIX)) {
          // Other instances' pings arrive too; only ours is awaited.
          return awaited !== undefined && awaited.payload === payload
            ? Deferred.succeed(awaited.received, undefined)
            : Effect.void
        }
        return channel.onPayload(payload)
      })

    /** Sends a ping on `channel` through the pool and waits for it to arrive on the LISTEN connection. */
    const ping = (channel: string, within: Duration.Duration) =>
      Effect.gen(function*() {
        const received = yield* Deferred.make<void>()
        const payload = `${PING_PREFIX}${instance}:${++pings}`
        awaited = { payload, received }
        yield* pg.notify(channel, payload).pipe(orStorageError("LISTEN heartbeat"))
        yield* Deferred.await(received).pipe(Effect.timeoutOrElse({
          duration: within,
          orElse: () =>
            Effect.fail(
              new StorageError({
                message: `PostgreSQL store: the LISTEN connection did not answer a ping within ${Duration.format(within)}`
              })
            )
        }))
      })

    /**
     * One connection's life: LISTEN on every channel, confirm each with a ping, run every
     * `onConnected`, then ping on every interval. Never succeeds: it ends when the connection is
     * lost (the driver fails the channels' queues) or stops answering pings.
     */
    const session = (onConfirmed: Effect.Effect<void>) =>
      Effect.scoped(Effect.gen(function*() {
        const client = yield* connection(pg.config)
        // Each LISTEN is confirmed by the server before its queue is handed back.
        const queues = yield* Effect.forEach(channels, (c) =>
          Effect.map(Effect.mapError(client.listen(c.channel), lost("could not LISTEN")), (queue) => [c, queue] as const))
        const listening = Effect.forEach(queues, ([channel, queue]) =>
          Queue.takeAll(queue).pipe(
            Effect.flatMap((batch) => Effect.forEach(batch, (n) => onNotification(channel, n.payload), { discard: true })),
            Effect.forever,
            Effect.mapError(lost("failed"))
          ), { concurrency: "unbounded", discard: true }).pipe(
            Effect.andThen(Effect.fail(new StorageError({ message: "PostgreSQL store: the LISTEN stream ended" })))
          )
        const heartbeat = Effect.gen(function*() {
          // The first ping through the pool proves the LISTEN connection hears what others send.
          for (const c of channels) {
            yield* Effect.retry(ping(c.channel, FIRST_PING_WAIT), Schedule.spaced(Duration.millis(10)).pipe(Schedule.upTo({ duration: timeout })))
          }
          yield* onConfirmed
          yield* Effect.forEach(channels, (c) => c.onConnected, { discard: true })
          // One channel suffices from now on: they all share the connection.
          return yield* Effect.forever(Effect.andThen(Effect.sleep(interval), ping(channels[0]!.channel, timeout)))
        })
        return yield* Effect.raceFirst(listening, heartbeat)
      }))

    const listenForever = Effect.gen(function*() {
      let failures = 0
      while (true) {
        yield* session(Effect.sync(() => {
          failures = 0
        })).pipe(Effect.catchCause((cause) =>
          Effect.logWarning("WES store: the LISTEN connection was lost or could not be set up; reconnecting", cause)
        ))
        failures++
        yield* Effect.sleep(backoff(failures))
      }
    })
    if (channels.length > 0) yield* Effect.forkScoped(listenForever)
  })
