/**
 * `wes serve`: the whole server as layers. Reading top to bottom:
 *   HTTP edge (httpLayer) -> use cases + dispatcher (@wes/core) -> store (memory | PostgreSQL,
 *   blobs in the store or in WES_BLOB_DIR) + runner gateway (@wes/runner-client) + platform.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import {
  IdGeneratorLive,
  RunnerProbe,
  type StoreServices,
  AgentMinFreeDisk,
  PriorityAging,
  TierPolicy,
  useCasesLayer
} from "@wes/core"
import { RunnerGatewayNode } from "@wes/runner-client"
import { MemoryStoreLive } from "@wes/storage-memory"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as HttpServer from "effect/http/HttpServer"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { WesConfig } from "./Config.js"
import { AgentEndpoint } from "./AgentEndpoint.js"
import { AgentHub } from "./AgentHub.js"
import { RunnerAgentsLive } from "./AgentRunnerAgents.js"
import { CryptoNode } from "./CryptoNode.js"
import { FsBlobStoreLive } from "./FsBlobStore.js"
import { inputFetcherNode } from "./InputFetcherNode.js"
import { denyPrivateProbe, runnerGuard } from "./RunnerAddressPolicy.js"
import { meteredGateway } from "./RunnerMetrics.js"
import { blobStoreKind, retentionLayer } from "./Retention.js"
import { httpLayer } from "./Server.js"
import { invalidConfig } from "./Startup.js"
import { tracingLayer, untraced } from "./Tracing.js"
import { webhookDeliveryLayer } from "./WebhookDelivery.js"

/** The store: memory (one process, nothing survives a restart) or PostgreSQL. */
export const storeLayer = (config: WesConfig): Layer.Layer<StoreServices, unknown> => {
  // The PostgreSQL store (and its driver) is loaded only when it is used.
  const store: Layer.Layer<StoreServices, unknown> = config.storage === "postgres"
    ? Layer.unwrap(Effect.map(Effect.promise(() => import("@wes/storage-pg")), ({ PgStoreLive }) =>
      PgStoreLive({
        url: Option.getOrThrow(config.databaseUrl),
        connectTimeout: "5 seconds",
        silenceTimeout: Option.getOrUndefined(config.dbSilenceTimeout),
        preparedStatements: config.dbPreparedStatements,
        runnerLeases: { leaseTime: config.lease, renewInterval: Duration.millis(Duration.toMillis(config.lease) / 3) }
      })))
    : MemoryStoreLive
  if (Option.isSome(config.blobStore)) return Layer.merge(store, s3BlobStore(config.blobStore.value, config.s3PathStyle))
  return Option.match(config.blobDir, {
    onNone: () => store,
    // Files on disk replace the store's own blobs.
    onSome: (dir) => Layer.merge(store, FsBlobStoreLive(dir).pipe(Layer.provide(Layer.merge(NodeFileSystem.layer, NodePath.layer))))
  })
}

/** Blobs in an S3 bucket (WES_BLOB_STORE), replacing the store's own; the AWS SDK is loaded only then. */
const s3BlobStore = (url: string, pathStyle: boolean) =>
  Layer.unwrap(Effect.flatMap(Effect.promise(() => import("@wes/storage-s3")), ({ parseS3Location, S3BlobStoreLive }) => {
    const parsed = parseS3Location(url)
    return "error" in parsed
      ? Effect.fail(invalidConfig("WES_BLOB_STORE", `WES_BLOB_STORE: ${parsed.error}`))
      : Effect.succeed(S3BlobStoreLive({ location: parsed.location, pathStyle }))
  }))

/**
 * Everything but the HTTP edge: use cases, dispatcher, store, runner gateway, platform. Its
 * background fibers (dispatcher, leases, LISTEN, migrations at start) are never traced, even with
 * tracing on: idle claims and lease renewals alone would be a root span per runner every second
 * (docs/decisions.md). What a request calls runs in the request's fiber, under its span.
 */
export const coreLayer = (config: WesConfig) => coreServices(config).pipe(Layer.provide(untraced))

const coreServices = (config: WesConfig) => {
  // Unless private addresses are allowed (WES_DEV, WES_RUNNER_ALLOW_PRIVATE=true), user runners' endpoints are checked on
  // create/update (probe) and at every connection, which goes to the address checked (the gateway's guard).
  // Agent runners (issue 34) are reached through their agent's connection to this instance (AgentHub.ts).
  const base = Layer.unwrap(Effect.gen(function*() {
    const hub = yield* AgentHub
    return RunnerGatewayNode({ ...(config.runnerDenyPrivate ? { guard: runnerGuard() } : {}), agents: hub.sessions })
  }))
  // Measured (prompts posted, output transfers, connected runners): RunnerMetrics.ts.
  const gateway = meteredGateway.pipe(Layer.provide(base))
  const probe = RunnerProbe.fromConfig.pipe(Layer.provide(gateway))
  const platform = IdGeneratorLive.pipe(Layer.provideMerge(CryptoNode))
  return useCasesLayer({
    capabilities: { refreshInterval: config.capabilityRefresh },
    dispatcher: {
      concurrencyPerRunner: config.runnerConcurrency,
      claimLease: config.lease,
      priorityAging: config.priorityAging,
      runnerLostAfter: config.runnerLostAfter,
      minFreeDiskBytes: config.agentMinFreeDisk
    }
  }).pipe(
    Layer.provideMerge(Layer.mergeAll(
      gateway,
      // What the agents report, provision and clean up, over their connections (AgentRunnerAgents.ts).
      RunnerAgentsLive,
      config.runnerDenyPrivate ? denyPrivateProbe().pipe(Layer.provide(probe)) : probe,
      TierPolicy.fromConfig,
      // URL inputs (`$file` parameters sent as URLs), fetched through the address policy.
      inputFetcherNode({
        timeout: config.inputUrlTimeout,
        maxTime: config.inputUrlMaxTime,
        allowPrivate: config.inputUrlAllowPrivate,
        allowHttp: config.inputUrlAllowHttp
      }),
      platform,
      // Queue positions order waiting work with the dispatcher's aging.
      Layer.succeed(PriorityAging, config.priorityAging),
      // Runners' views say why an agent runner short of disk takes no work, with the dispatcher's threshold.
      Layer.succeed(AgentMinFreeDisk, config.agentMinFreeDisk)
    )),
    // One store and one hub of agent connections under everything (the gateway, RunnerAgents and the endpoint share it).
    Layer.provideMerge(Layer.merge(storeLayer(config), AgentHub.layer({ leaseTime: config.lease })))
  )
}

/** The server. */
export const serverLayer = (config: WesConfig) => {
  const base = `http://${config.host === "0.0.0.0" ? "127.0.0.1" : config.host}:${config.port}`
  // The agent endpoint (AgentEndpoint.ts) takes its path's WebSocket upgrades on the same port.
  const http = httpLayer({
    port: config.port,
    host: config.host,
    rateLimit: config.rateLimit,
    trustedProxies: config.trustedProxies,
    adminToken: config.adminToken,
    metricsToken: config.metricsToken,
    sseKeepAlive: "15 seconds",
    shutdownGrace: config.shutdownGrace,
    traced: Option.isSome(config.tracing),
    webhooks: { allowPrivate: !config.webhookDenyPrivate },
    // WES_BLOB_REDIRECT: downloads answer 307 to the store's signed URL (S3), valid 15 minutes.
    outputs: { redirect: config.blobRedirect, signedUrlSeconds: 900 }
  }).pipe(Layer.provide(AgentEndpoint.layer))
  // Logged once the listener is bound (it is built after the HTTP layer), with the bound port.
  // Its finalizer runs first on shutdown (it was built last): the `stopping` line.
  const started = Layer.effectDiscard(Effect.gen(function*() {
    const { address } = yield* HttpServer.HttpServer
    const port = address._tag === "UnixPathAddress" ? config.port : address.port
    yield* Effect.logInfo("wes serve listening", {
      address: base,
      port,
      storage: config.storage,
      admin_api: Option.isSome(config.adminToken),
      tracing: Option.match(config.tracing, { onNone: () => "off", onSome: (t) => t.url }),
      rate_limit: config.rateLimit === "off" ? "off" : `${config.rateLimit.limit}/${config.rateLimit.windowMs}ms`
    })
    yield* Effect.addFinalizer(() => Effect.logInfo("stopping", { grace: Duration.format(config.shutdownGrace) }))
    if (config.storage === "memory") {
      yield* Effect.logWarning("memory store: nothing survives a restart (set WES_STORAGE=postgres and DATABASE_URL to keep data)")
    }
  }))
  // Dev mode's simulated runner is loaded only in dev mode.
  const dev = config.dev
    ? Layer.unwrap(Effect.map(Effect.promise(() => import("./Dev.js")), ({ devLayer }) => devLayer(base)))
    : Layer.empty
  // Webhook deliveries: the pool sends what the store's outbox holds (WebhookDelivery.ts).
  // Background work, like the dispatcher's, is never traced (Tracing.ts).
  const webhooks = webhookDeliveryLayer({
    timeout: config.webhookTimeout,
    denyPrivate: config.webhookDenyPrivate,
    retry: { base: config.webhookRetryBase, cap: Duration.hours(1) },
    // Like workflow claims: an instance that dies leaves its deliveries to others after WES_LEASE (beyond the send timeout).
    leaseMargin: config.lease
  }).pipe(Layer.provide(untraced))
  // Retention: expired files deleted, old events and deliveries pruned, every WES_RETENTION_INTERVAL (Retention.ts).
  const retention = retentionLayer({
    interval: config.retentionInterval,
    store: blobStoreKind(config),
    eventsAfter: config.eventsRetention,
    deliveriesAfter: config.deliveriesRetention
  }).pipe(Layer.provide(untraced))
  const app = Layer.mergeAll(started.pipe(Layer.provideMerge(http)), dev, webhooks, retention)
  // Spans exported over OTLP when OTEL_EXPORTER_OTLP_*ENDPOINT is set; otherwise none is built (Tracing.ts).
  return app.pipe(Layer.provide(coreLayer(config)), Layer.provide(tracingLayer(config.tracing)))
}

export { untraced }
