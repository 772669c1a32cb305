/**
 * ONE `LISTEN` connection per store, shared by every channel the store listens on (workflow
 * events, dispatch wake-ups, webhooks), with a heartbeat and reconnection.
 *
 * NOTIFY is only a wake-up here: whoever is woken reads the database. A notification can
 * therefore be lost without losing anything, as long as everyone looks again after the loss; so
 * after every (re)connection each channel's `onConnected` runs.
 *
 * The connection is the listener's own (node-postgres, on the `PgClient`'s settings), not
 * `PgClient.listen`'s: that one swallows the driver's errors and the stream just goes quiet, so a
 * lost connection was noticed only by the heartbeat, up to `heartbeatInterval` + `heartbeatTimeout`
 * later (about 14 s by default, measured in B6), during which no instance's subscriber on it was
 * woken. Here the driver's `error` and `end` end the session at once, and it reconnects after a
 * short backoff. The heartbeat stays for what the driver cannot see (a connection that went
 * silent without a reset): a ping sent with `pg_notify` through the pool must come back on the
 * LISTEN connection within the timeout.
 *
 * Notifications wait in the stream's buffer, which has no bound (the driver pushes them); each
 * is handled in O(1), so it drains as fast as it fills.
 */
import { PgClient } from "@effect/sql-pg"
import { StorageError } from "@wes/core"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import Pg from "pg"
import { driverConfig } from "./PgPool.js"
import { orStorageError, run } from "./Sql.js"

/** Heartbeat settings of the LISTEN connection. */
export interface PgListenOptions {
  /** How often the LISTEN connection is checked with a ping through the database (default 10 seconds). */
  readonly heartbeatInterval?: Duration.DurationInput | undefined
  /** How long a ping may take before the LISTEN connection counts as lost (default 5 seconds). */
  readonly heartbeatTimeout?: Duration.DurationInput | undefined
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
 * How long a ping on a new connection may take before it is sent again: the first one usually
 * goes out before the LISTEN command has run, and is lost.
 */
const FIRST_PING_WAIT = Duration.millis(100)
/** Delay before reconnecting after the n-th consecutive failure: 100 ms doubling up to 5 s. */
const backoff = (failures: number): Duration.Duration => Duration.millis(Math.min(5_000, 100 * 2 ** Math.min(failures - 1, 6)))

const lost = (what: string) => (e: unknown) =>
  new StorageError({ message: `PostgreSQL store: the LISTEN connection ${what}${e instanceof Error ? `: ${e.message}` : ""}` })

/** A connection of the listener's own, on the client's settings (as @effect/sql-pg opens its pool's). */
const connection = (config: PgClient.PgClientConfig): Effect.Effect<Pg.Client, StorageError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.suspend(() => {
      const client = new Pg.Client(driverConfig(config))
      // Until the session listens, an error only has to not crash the process; the session reports it.
      client.on("error", () => {})
      return Effect.as(Effect.tryPromise({ try: () => client.connect(), catch: lost("could not be opened") }), client)
    }),
    (client) => Effect.promise(() => client.end().catch(() => undefined))
  )

/** Every notification of `client`; fails as soon as the driver reports an error or the end of the connection. */
const notifications = (client: Pg.Client): Stream.Stream<Pg.Notification, StorageError> =>
  Stream.asyncPush<Pg.Notification, StorageError>((emit) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        const onNotification = (message: Pg.Notification) => void emit.single(message)
        const onError = (e: Error) => void emit.fail(lost("failed")(e))
        const onEnd = () => void emit.fail(lost("was closed")(undefined))
        client.on("notification", onNotification).on("error", onError).on("end", onEnd)
        return { onNotification, onError, onEnd }
      }),
      (h) => Effect.sync(() => void client.off("notification", h.onNotification).off("error", h.onError).off("end", h.onEnd))
    ))

/** How often the LISTEN connection is pinged when `heartbeatInterval` is not given. */
export const DEFAULT_HEARTBEAT_INTERVAL = Duration.seconds(10)

/** Listens on `channels` for the life of the scope, reconnecting whenever the connection is lost. */
export const startListener = (
  channels: ReadonlyArray<ListenChannel>,
  options: PgListenOptions = {}
): Effect.Effect<void, never, PgClient.PgClient | Scope.Scope> =>
  Effect.gen(function*() {
    const pg = yield* PgClient.PgClient
    const interval = Duration.decode(options.heartbeatInterval ?? DEFAULT_HEARTBEAT_INTERVAL)
    const timeout = Duration.decode(options.heartbeatTimeout ?? Duration.seconds(5))
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
        yield* run(pg`SELECT pg_notify(${channel}, ${payload})`).pipe(orStorageError("LISTEN heartbeat"))
        yield* Deferred.await(received).pipe(Effect.timeoutFail({
          duration: within,
          onTimeout: () =>
            new StorageError({
              message: `PostgreSQL store: the LISTEN connection did not answer a ping within ${Duration.format(within)}`
            })
        }))
      })

    const byChannel = new Map(channels.map((c) => [c.channel, c]))

    /**
     * One connection's life: LISTEN on every channel, confirm each with a ping, run every
     * `onConnected`, then ping on every interval. Never succeeds: it ends when the connection is
     * lost (the driver says so) or stops answering pings.
     */
    const session = (onConfirmed: Effect.Effect<void>) =>
      Effect.scoped(Effect.gen(function*() {
        const client = yield* connection(pg.config)
        const listening = notifications(client).pipe(
          Stream.runForEach((message) => {
            const channel = byChannel.get(message.channel)
            return channel === undefined || message.payload === undefined ? Effect.void : onNotification(channel, message.payload)
          }),
          Effect.andThen(Effect.fail(new StorageError({ message: "PostgreSQL store: the LISTEN stream ended" })))
        )
        const heartbeat = Effect.gen(function*() {
          for (const c of channels) {
            yield* Effect.tryPromise({ try: () => client.query(`LISTEN ${client.escapeIdentifier(c.channel)}`), catch: lost("could not LISTEN") })
          }
          // The first ping through the pool proves the LISTEN connection hears what others send.
          for (const c of channels) {
            yield* Effect.retry(ping(c.channel, FIRST_PING_WAIT), Schedule.spaced(Duration.millis(10)).pipe(Schedule.upTo(timeout)))
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
