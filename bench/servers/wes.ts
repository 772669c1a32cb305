/**
 * WES for benchmarks, in a child process: the production layers of `wes serve` (http-node's
 * httpLayer over the use cases, the dispatcher, the real runner client) with the knobs a
 * benchmark needs, set by environment:
 *   BENCH_STORE     memory (default) | postgres (DATABASE_URL)
 *   BENCH_AUTH      tokens (default) | bypass (every /v1 request is the set-up user; B7's baseline)
 *   BENCH_DISPATCH  on (default) | off (API only)
 *   BENCH_RATE_LIMIT off (default) | e.g. 40/10s
 *   BENCH_BLOB_DIR  keep blobs as files there (default: in the store)
 *   BENCH_BLOB_STORE s3://bucket/prefix: keep blobs in an S3 bucket (the AWS SDK's environment, path-style)
 *   BENCH_APP_NAME  PostgreSQL application_name of this instance's connections
 *   BENCH_PG_PREPARED on (default, as `wes serve`) | off (every statement unnamed: parsed and planned at each run)
 *   BENCH_TRACING   off (default, as `wes serve`) | on (Effect's spans built, as in an embedding with a tracer)
 *   BENCH_GC_NUDGE  on (default, as `wes serve`) | off (no young collections asked for: GarbageNudge.ts)
 *   BENCH_WEBHOOKS  off (default) | on (the webhook delivery pool runs, private URLs allowed: B10)
 *   BENCH_COUNT_OPS off (default) | on (every primitive Effect's run loop evaluates counted by kind,
 *                   and sampled by source every OPS_EVERY: `counters`, `opSources`; through the
 *                   `Tracer.context` hook, see opcount.ts; a probe's tool for work per workflow or
 *                   request, deterministic where CPU time is not)
 *   BENCH_COUNT_FIBERS off (default) | on (every fiber started under the server's runtime is
 *                   counted, through Effect's `Metric.FiberRuntimeMetrics` hook: `counters.fibers`)
 *   BENCH_STAMPS    off (default) | on (the time of each request's arrival and answer, and of each
 *                   runner request's creation and headers sent, from node's and undici's
 *                   diagnostics channels: `stamps`; a probe's tool for where a latency goes)
 *   BENCH_AGENT     off (default) | on (runners may be reached through `wes-agent`: the agent endpoint,
 *                   the hub of agent connections and the gateway's tunnels, as `wes serve` wires them; B12)
 * IPC commands: setup (a user and its token, `runners` at endpoints, `agents` agent runners with a
 * runner token each), counters, flushTokenUse, memory, heapSnapshot, allocStart, allocStop, stamps,
 * seed, createUsers, startDispatcher, stopDispatcher, unfinished (and every child's `cpu`,
 * `profileStart`, `profileStop`).
 */
import * as HttpServer from "effect/http/HttpServer"
import {
  AccountRepository,
  AccountService,
  AgentTokenService,
  IdGeneratorLive,
  type Principal,
  RunnerProbe,
  RunnerService,
  type StoreServices,
  TierPolicy,
  useCasesLayer,
  type User,
  WorkflowRepository,
  WorkflowService
} from "@wes/core"
import * as NodeServices from "@effect/platform-node/NodeServices"
import {
  AgentEndpoint,
  AgentHub,
  CryptoNode,
  FsBlobStoreLive,
  httpLayer,
  jsonLoggerLayer,
  parseRateLimit,
  RunnerAgentsLive,
  startGarbageNudge,
  untraced,
  webhookDeliveryLayer
} from "@wes/http-node"
import { RunnerGatewayNode } from "@wes/runner-client"
import { MemoryStoreLive } from "@wes/storage-memory"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as diagnostics from "node:diagnostics_channel"
import * as v8 from "node:v8"
import { inspectorSession, serve, stopInto } from "../lib/child.js"
import { opCounterLayer, opStats } from "./opcount.js"

const env = (name: string, fallback: string) => process.env[name] ?? fallback

const counters = { tokenLookups: 0, tokenUseWrites: 0, tokenUseRows: 0, fibers: 0 }

/** BENCH_STAMPS=on: `[what, epoch ms]` of each HTTP exchange in and out (at most 100,000). */
const stamps: Array<readonly [string, number]> = []
if (process.env["BENCH_STAMPS"] === "on") {
  const stamp = (what: string) => () => void (stamps.length < 100_000 && stamps.push([what, performance.timeOrigin + performance.now()]))
  diagnostics.subscribe("http.server.request.start", stamp("request"))
  diagnostics.subscribe("http.server.response.finish", stamp("answered"))
  diagnostics.subscribe("undici:request:create", stamp("runner request"))
  diagnostics.subscribe("undici:client:sendHeaders", stamp("runner headers sent"))
}

/**
 * BENCH_COUNT_FIBERS=on: every fiber created with the server's runtime in its context (each fork,
 * each `runtime.runPromise`) is counted (`counters.fibers`), to find work per workflow. Effect 4
 * calls this hook as a fiber is created, as Effect 3's `Supervisor.onStart` was.
 */
const fiberCounter = Layer.succeed(Metric.FiberRuntimeMetrics, {
  recordFiberStart: () => void counters.fibers++,
  recordFiberEnd: () => {}
})
let principal: Principal | undefined

// Loaded only when used, as `wes serve` does: the driver and SQL modules weigh on the memory figures.
const pgStore = () =>
  Layer.unwrap(Effect.map(Effect.promise(() => import("@wes/storage-pg")), ({ PgStoreLive }) =>
    PgStoreLive({
      url: Redacted.make(env("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/test")),
      maxConnections: 10,
      applicationName: env("BENCH_APP_NAME", "wes-bench"),
      preparedStatements: env("BENCH_PG_PREPARED", "on") === "on"
    })))
const storeOnly: Layer.Layer<StoreServices, unknown> = env("BENCH_STORE", "memory") === "postgres" ? pgStore() : MemoryStoreLive
const blobDir = process.env["BENCH_BLOB_DIR"]
const blobStore = process.env["BENCH_BLOB_STORE"]
// Loaded only when used, as `wes serve` does.
const s3Blobs = (url: string) =>
  Layer.unwrap(Effect.map(Effect.promise(() => import("@wes/storage-s3")), ({ parseS3Location, S3BlobStoreLive }) => {
    const parsed = parseS3Location(url)
    if ("error" in parsed) throw new Error(`BENCH_BLOB_STORE: ${parsed.error}`)
    return S3BlobStoreLive({ location: parsed.location, pathStyle: true })
  }))
const baseStore: Layer.Layer<StoreServices, unknown> = blobStore !== undefined
  ? Layer.merge(storeOnly, s3Blobs(blobStore))
  : blobDir === undefined
  ? storeOnly
  : Layer.merge(storeOnly, FsBlobStoreLive(blobDir).pipe(Layer.provide(NodeServices.layer)))

/** The store, with the token lookups and `last_used_at` writes counted (B7). */
const store = Layer.effect(
  AccountRepository,
  Effect.map(AccountRepository, (repo) =>
    AccountRepository.of({
      ...repo,
      findTokenByHash: (hash) => Effect.andThen(Effect.sync(() => counters.tokenLookups++), repo.findTokenByHash(hash)),
      recordTokenUse: (uses) =>
        Effect.andThen(Effect.sync(() => {
          counters.tokenUseWrites++
          counters.tokenUseRows += uses.length
        }), repo.recordTokenUse(uses))
    }))
).pipe(Layer.provideMerge(baseStore))

/** BENCH_AGENT=on: agent runners reached through their agents' connections, as `wes serve` wires them (Main.ts). */
const agentsOn = env("BENCH_AGENT", "off") === "on"
const gateway = RunnerGatewayNode()
const tunnelingGateway = Layer.unwrap(Effect.gen(function*() {
  const hub = yield* AgentHub
  return RunnerGatewayNode({ agents: hub.sessions })
}))
const platform = IdGeneratorLive.pipe(Layer.provideMerge(CryptoNode))
const unlimited = {
  active_workflows: 10_000_000, workflows_per_day: 10_000_000, templates: 1_000_000, runners: 10_000, workflow_params: 200,
  // B11's gigabyte outputs and 100 MB inputs.
  max_upload_bytes: 2 * 1024 ** 3, max_output_bytes: 16 * 1024 ** 3
}
const useCases = env("BENCH_DISPATCH", "on") === "on"
  ? useCasesLayer({ dispatcher: { concurrencyPerRunner: 16 } })
  : useCasesLayer()
let dispatcher: Fiber.Fiber<never, unknown> | undefined
// Off, the hub exists (as in `wes serve`) but nothing reaches it: no endpoint, no tunnels, no agent calls.
const core = useCases.pipe(
  Layer.provideMerge(Layer.mergeAll(
    agentsOn ? tunnelingGateway : gateway,
    agentsOn ? RunnerAgentsLive : Layer.empty,
    RunnerProbe.Off,
    TierPolicy.layer({ free: unlimited, pro: unlimited, plus: unlimited }),
    platform
  )),
  // One store and one hub of agent connections under everything, as in `wes serve`.
  Layer.provideMerge(Layer.merge(store, AgentHub.layer()))
)

/** B7's baseline: authentication answers the set-up user without looking at the request. */
const bypassed = Layer.effect(
  AccountService,
  Effect.map(AccountService, (accounts) =>
    AccountService.of({
      ...accounts,
      authenticate: () => (principal === undefined ? Effect.die(new Error("bench: setup not run")) : Effect.succeed(principal))
    }))
).pipe(Layer.provideMerge(core))
const services = env("BENCH_AUTH", "tokens") === "bypass" ? bypassed : core

const rateLimit = Result.getOrThrow(parseRateLimit(env("BENCH_RATE_LIMIT", "off")))
const http = httpLayer({
  port: Number(env("BENCH_PORT", "0")),
  host: "127.0.0.1",
  rateLimit,
  trustedProxies: 0,
  adminToken: Option.none(),
  sseKeepAlive: "15 seconds",
  shutdownGrace: "1 second",
  webhooks: { allowPrivate: true }
}).pipe(Layer.provide(agentsOn ? AgentEndpoint.layer : Layer.empty))
const webhooks = env("BENCH_WEBHOOKS", "off") === "on"
  ? webhookDeliveryLayer({ timeout: "10 seconds", denyPrivate: false, retry: { base: "5 seconds", cap: "1 hour" } })
  : Layer.empty

// The logger, tracing switch and probes are merged (provideMerge), not only provided: in Effect 4
// they are services of the context, and the runtime's own fibers (setup, seed, ... below) must
// run on them too, as Effect 3's FiberRef layers did.
const runtime = ManagedRuntime.make(Layer.merge(http, webhooks).pipe(
  Layer.provideMerge(services),
  Layer.provideMerge(jsonLoggerLayer(env("BENCH_LOGS", "off") === "on" ? undefined : () => {})),
  // As `wes serve` (serverLayer); BENCH_TRACING=on measures what the spans cost.
  Layer.provideMerge(env("BENCH_TRACING", "off") === "on" ? Layer.empty : untraced),
  Layer.provideMerge(env("BENCH_COUNT_FIBERS", "off") === "on" ? fiberCounter : Layer.empty),
  Layer.provideMerge(env("BENCH_COUNT_OPS", "off") === "on" ? opCounterLayer : Layer.empty)
))

const main = async () => {
  // As `wes serve` (bin.ts): young collections when dropped byte buffers pile up. BENCH_GC_NUDGE=off measures its cost.
  if (env("BENCH_GC_NUDGE", "on") === "on") startGarbageNudge()
  const server = await runtime.runPromise(HttpServer.HttpServer)
  const address = server.address
  if (address._tag === "UnixPathAddress") throw new Error("expected TCP")
  const users: Array<User> = []
  serve({
    /** A user (plus tier) with a token, and runners at the given endpoints. */
    setup: (args) =>
      runtime.runPromise(Effect.gen(function*() {
        const { runners = [], agents = 0 } = (args ?? {}) as { readonly runners?: ReadonlyArray<string>; readonly agents?: number }
        const accounts = yield* AccountService
        const user = yield* accounts.createUser({ tier: "plus" })
        users.push(user)
        const issued = yield* accounts.issueToken(user.id, { name: "bench" })
        principal = { user, token_id: issued.id }
        const ids: Array<string> = []
        for (const [i, endpoint] of runners.entries()) {
          ids.push((yield* (yield* RunnerService).create(user, { name: `bench-${i}`, endpoint })).id)
        }
        // Agent runners (BENCH_AGENT=on: B12), each with a runner token for its wes-agent.
        const agentRunners: Array<{ id: string; token: string }> = []
        for (let i = 0; i < agents; i++) {
          const runner = yield* (yield* RunnerService).create(user, { name: `bench-agent-${i}`, connection: "agent" })
          agentRunners.push({ id: runner.id, token: (yield* (yield* AgentTokenService).create(user, runner.id)).token })
        }
        return { token: issued.token, userId: user.id, runnerIds: ids, agentRunners }
      })),
    /** More users with tokens (for many-token benchmarks). */
    createUsers: (args) =>
      runtime.runPromise(Effect.gen(function*() {
        const { n } = args as { readonly n: number }
        const accounts = yield* AccountService
        const tokens: Array<string> = []
        for (let i = 0; i < n; i++) {
          const user = yield* accounts.createUser({ tier: "free" })
          tokens.push((yield* accounts.issueToken(user.id, { name: "bench" })).token)
        }
        return tokens
      })),
    stamps: () => stamps.splice(0),
    counters: () => ({ ...counters, ops: opStats.total, byOp: opStats.byOp }),
    opReset: () => { opStats.bySrc.clear(); return true },
    traceStart: () => { opStats.trace = []; return true },
    traceStop: () => { const t = opStats.trace; opStats.trace = undefined; return t },
    opSources: () => [...opStats.bySrc].sort((a, b) => b[1] - a[1]).slice(0, 60),
    /** Writes pending last_used_at updates now (otherwise done every 10 s). */
    flushTokenUse: () => runtime.runPromise(Effect.flatMap(AccountService, (a) => a.flushTokenUse)).then(() => true),
    /** Writes a heap snapshot into BENCH_PROFILE_DIR (or the working directory); answers its path. */
    heapSnapshot: () => v8.writeHeapSnapshot(process.env["BENCH_PROFILE_DIR"] ? `${process.env["BENCH_PROFILE_DIR"]}/wes-${Date.now()}.heapsnapshot` : undefined),
    /** Starts sampling allocations (BENCH_COUNT_OPS-style probes of garbage per workflow). */
    allocStart: async (args) => {
      const session = inspectorSession()
      // `{ live: true }`: only what is still reachable when sampling stops (what memory grows by).
      const collected = (args as { live?: boolean } | undefined)?.live !== true
      await session.post("HeapProfiler.enable")
      await session.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: collected, includeObjectsCollectedByMinorGC: collected } as never)
      return true
    },
    /** Stops it and writes the sampled allocations as `<path>` (a .heapprofile); answers the path. */
    allocStop: (args) => stopInto(args, async (session) => (await session.post("HeapProfiler.stopSampling")).profile),
    /** Memory after two full collections, or as it stands with `{ collect: false }`. */
    memory: (args) => {
      const gc = (globalThis as { gc?: () => void }).gc
      if ((args as { collect?: boolean } | undefined)?.collect !== false) {
        gc?.()
        gc?.()
      }
      return { ...process.memoryUsage(), spaces: v8.getHeapSpaceStatistics().map((s) => [s.space_name, Math.round(s.space_size / 1048576), Math.round(s.space_used_size / 1048576)]) }
    },
    /** Stores `n` workflows for the set-up user through the use case (B2, B8). */
    seed: (args) =>
      runtime.runPromise(Effect.gen(function*() {
        const { n, workflow } = args as { readonly n: number; readonly workflow: unknown }
        const workflows = yield* WorkflowService
        const user = users[0]!
        yield* Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) =>
          workflows.create(user, { name: `seed-${i}`, workflow_json: workflow }), { concurrency: 8, discard: true })
        return n
      })),
    /** Starts the dispatcher now (with BENCH_DISPATCH=off): a burn-down of work stored before. */
    startDispatcher: () => {
      if (dispatcher !== undefined) return false
      dispatcher = runtime.runFork(Effect.scoped(Effect.andThen(Layer.build(useCasesLayer({ dispatcher: { concurrencyPerRunner: 16 } })), Effect.never)))
      return true
    },
    /** Stops the dispatcher started by startDispatcher (between waves of work: B6). */
    stopDispatcher: async () => {
      if (dispatcher === undefined) return false
      await runtime.runPromise(Fiber.interrupt(dispatcher))
      dispatcher = undefined
      return true
    },
    /** Unfinished workflows of the set-up user. */
    unfinished: () => runtime.runPromise(Effect.flatMap(WorkflowRepository, (repo) => repo.countActive(users[0]!.id)))
  }, { url: `http://127.0.0.1:${address.port}` })
}

process.on("SIGTERM", () => void runtime.dispose().then(() => process.exit(0)))
main().catch((e) => {
  console.error(e)
  process.exit(1)
})
