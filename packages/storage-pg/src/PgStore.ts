/** The layers that assemble the PostgreSQL store. */
import * as net from "node:net"
import type { Duplex } from "node:stream"
import { PgClient } from "@effect/sql-pg"
import {
  DispatchQueue,
  type StorageError,
  type StoreServices,
  WebhookRepository,
  WorkflowEventBus,
  WorkflowPreviews,
  WorkflowRepository
} from "@wes/core"
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as SqlClient from "effect/sql/SqlClient"
import { PgMigrationsLive } from "./Migrations.js"
import { PgAccountRepository } from "./PgAccountRepository.js"
import { PgBlobStore } from "./PgBlobStore.js"
import { makePgDispatchQueue, type PgDispatchQueueOptions, workWakeupsOn } from "./PgDispatchQueue.js"
import { makePgEventBusWith } from "./PgEventBus.js"
import { DEFAULT_EVENTS_CHANNEL, eventWakeupsOn, type PgEventBusOptions } from "./PgEventWakeups.js"
import { DEFAULT_HEARTBEAT_INTERVAL, startListener } from "./PgListener.js"
import { PgManagedRunnerRepository } from "./PgManagedRunnerRepository.js"
import { makePgPreviews } from "./PgPreviews.js"
import { layerPgAgentOwnership } from "./PgAgentPresence.js"
import { type PgRunnerOwnershipOptions } from "./PgRunnerOwnership.js"
import { PgRunnerLoad } from "./PgRunnerLoad.js"
import { PgCapabilityRepository } from "./PgCapabilityRepository.js"
import { PgRetention } from "./PgRetention.js"
import { PgRunnerRepository } from "./PgRunnerRepository.js"
import { PgRunnerTokenRepository } from "./PgRunnerTokenRepository.js"
import { PgTemplateRepository } from "./PgTemplateRepository.js"
import { makePgWebhookRepository, webhookWakeupsOn } from "./PgWebhookRepository.js"
import { DEFAULT_WEBHOOKS_CHANNEL } from "./WorkflowWrites.js"
import { makePgWorkflowRepository } from "./PgWorkflowRepository.js"
import { makePgClient, type PgPoolConfig } from "./PgPool.js"
import { storageError } from "./Sql.js"

/** Connections per instance: enough for a 2-core server; PostgreSQL's default allows 100 in all. */
export const DEFAULT_POOL_SIZE = 10

/** How long a connection may go without a byte either way before it is dropped (`silenceTimeout`). */
export const DEFAULT_SILENCE_TIMEOUT = Duration.seconds(30)

export interface PgStoreOptions {
  /** The events' NOTIFY channel, and the heartbeat of the LISTEN connection (shared with the dispatch queue). */
  readonly events?: PgEventBusOptions | undefined
  /** The dispatch queue's NOTIFY channel and wake-up buffer. */
  readonly dispatch?: PgDispatchQueueOptions | undefined
  /** This instance's name, and the lease and renewal times of runner ownership. */
  readonly runnerLeases?: PgRunnerOwnershipOptions | undefined
}

/** How to connect, plus the store's options. Name transforms and custom type parsers are not offered: the store's SQL relies on neither. */
export interface PgStoreConfig extends PgPoolConfig, PgStoreOptions {
  /**
   * A connection that carries nothing, either way, for this long is dropped (default
   * `DEFAULT_SILENCE_TIMEOUT`; `Duration.infinity` for never). It is how a statement whose
   * connection went silent (a network partition: no reset, no answer) fails with a
   * `StorageError` instead of waiting minutes on the TCP stack, and the pool opens a new
   * connection. An idle pooled connection is closed by the pool after its `idleTimeout` (10 s) or
   * by this, whichever comes first; the LISTEN connection's heartbeat comes at least three times
   * per `silenceTimeout` (unless `events.heartbeatInterval` says otherwise). A statement that
   * legitimately runs longer than this without sending a row fails too. Not used with your own
   * `stream` (which the store connects to the configured server when it is not connected yet).
   */
  readonly silenceTimeout?: Duration.Input | undefined
}

/**
 * Where the driver connects, as `@effect/sql-pg` resolves it: explicit settings over the URL's
 * (its `host` and `port` parameters over its authority), a host starting with `/` being a
 * directory of Unix sockets.
 */
const endpointOf = (config: PgPoolConfig): net.NetConnectOpts => {
  const url = config.url === undefined ? undefined : new URL(Redacted.value(config.url))
  const urlHost = url === undefined || url.hostname === "" ? undefined : decodeURIComponent(url.hostname.replace(/^\[(.*)\]$/, "$1"))
  const host = config.host ?? url?.searchParams.get("host") ?? urlHost ?? "localhost"
  const port = config.port ?? Number(url?.searchParams.get("port") ?? (url === undefined || url.port === "" ? 5432 : url.port))
  const path = config.path ?? (host.startsWith("/") ? `${host}/.s.PGSQL.${port}` : undefined)
  return path === undefined ? { host, port, noDelay: true } : { path }
}

/**
 * The driver's socket: `stream`'s, or a TCP (or Unix) socket of its own. `@effect/sql-pg` writes
 * to a stream at once, so one that is not connected yet (as node-postgres took them) is connected
 * here to the configured server. Its own socket destroys itself after `silenceMs` without traffic
 * either way.
 */
const driverSocket = (config: PgPoolConfig, silenceMs: number | undefined) => (): Duplex => {
  if (config.stream !== undefined) {
    const stream = config.stream()
    if (stream instanceof net.Socket && stream.pending && !stream.connecting) stream.connect(endpointOf(config))
    return stream
  }
  const socket = net.connect(endpointOf(config))
  if (config.keepAlive !== undefined) socket.setKeepAlive(true, Duration.toMillis(Duration.fromInputUnsafe(config.keepAlive)))
  if (silenceMs !== undefined) {
    socket.setTimeout(silenceMs, () => socket.destroy(new Error(`PostgreSQL connection silent for ${silenceMs} ms: dropped`)))
  }
  return socket
}

/**
 * The workflow repository, the event bus, live previews, the dispatch queue and the webhook repository on the
 * `PgClient` in context: the workflow repository's writes announce on the channels the others
 * listen on, through ONE LISTEN connection (every channel), with the heartbeat settings of `events`.
 */
export const layerPgWorkflows = (
  options: Pick<PgStoreOptions, "events" | "dispatch"> = {}
): Layer.Layer<WorkflowRepository | WorkflowEventBus | WorkflowPreviews | DispatchQueue | WebhookRepository, never, PgClient.PgClient> =>
  Layer.effectContext(Effect.gen(function*() {
    const events = eventWakeupsOn(options.events?.channel ?? DEFAULT_EVENTS_CHANNEL)
    const work = yield* workWakeupsOn(options.dispatch)
    const webhooks = yield* webhookWakeupsOn(DEFAULT_WEBHOOKS_CHANNEL)
    const previews = yield* makePgPreviews()
    yield* startListener([events.listen, work.listen, webhooks.listen, previews.listen], options.events)
    const bus = yield* makePgEventBusWith(events.wakeups)
    const withSql = Effect.provideServiceEffect(SqlClient.SqlClient, PgClient.PgClient)
    const queue = yield* makePgDispatchQueue(work).pipe(withSql)
    const repo = yield* makePgWorkflowRepository({
      events: events.wakeups.channel,
      work: work.channel,
      webhooks: webhooks.listen.channel
    }).pipe(withSql)
    const hooks = yield* makePgWebhookRepository(webhooks.recorded).pipe(withSql)
    return Context.make(WorkflowEventBus, bus).pipe(
      Context.add(WorkflowPreviews, previews.previews),
      Context.add(DispatchQueue, queue),
      Context.add(WorkflowRepository, repo),
      Context.add(WebhookRepository, hooks)
    )
  }))

const SqlFromPg: Layer.Layer<SqlClient.SqlClient, never, PgClient.PgClient> = Layer.effect(SqlClient.SqlClient, PgClient.PgClient)

/**
 * Every store service of core on an existing `PgClient` (whose pool and LISTEN connection it
 * shares); runs the migrations first. The client must keep pg's default type parsers.
 */
export const PgStoreFromClient = (
  options: PgStoreOptions = {}
): Layer.Layer<StoreServices, StorageError, PgClient.PgClient> =>
  Layer.mergeAll(
    PgTemplateRepository,
    PgRunnerRepository,
    PgRunnerTokenRepository,
    PgManagedRunnerRepository,
    PgAccountRepository,
    PgBlobStore,
    PgRunnerLoad,
    PgCapabilityRepository,
    PgRetention,
    layerPgWorkflows(options),
    // Runner leases that leave an agent runner to the instance its agent is connected to (issue 34).
    layerPgAgentOwnership(options.runnerLeases)
  ).pipe(Layer.provide(PgMigrationsLive), Layer.provide(SqlFromPg))

/**
 * The store with its own connection pool (default size `DEFAULT_POOL_SIZE`); migrations run at
 * start. It also provides its `PgClient` / `SqlClient`, for whatever else shares the database.
 */
export const PgStoreLive = (
  config: PgStoreConfig
): Layer.Layer<StoreServices | PgClient.PgClient | SqlClient.SqlClient, StorageError> => {
  const { dispatch, events, runnerLeases, silenceTimeout, ...client } = config
  const silence = Duration.fromInputUnsafe(silenceTimeout ?? DEFAULT_SILENCE_TIMEOUT)
  // The LISTEN connection only receives; its heartbeat must come more often than the silence
  // that drops a connection.
  const heartbeatInterval = events?.heartbeatInterval ?? Duration.min(DEFAULT_HEARTBEAT_INTERVAL, Duration.divideUnsafe(silence, 3))
  const pool = PgClient.layerFrom(
    makePgClient({
      ...client,
      stream: driverSocket(client, Duration.isFinite(silence) ? Duration.toMillis(silence) : undefined),
      maxConnections: client.maxConnections ?? DEFAULT_POOL_SIZE,
      applicationName: client.applicationName ?? "wes"
    }).pipe(Effect.mapError(storageError("connect")))
  )
  return PgStoreFromClient({ dispatch, events: { ...events, heartbeatInterval }, runnerLeases }).pipe(Layer.provideMerge(pool))
}

/** `PgStoreLive` connected to `DATABASE_URL`. */
export const PgStoreFromEnv = (
  options: Omit<PgStoreConfig, "url"> = {}
): Layer.Layer<StoreServices | PgClient.PgClient | SqlClient.SqlClient, StorageError | Config.ConfigError> =>
  Layer.unwrap(Effect.map(Config.Redacted("DATABASE_URL"), (url) => PgStoreLive({ ...options, url })))
