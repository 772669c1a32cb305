/**
 * Black-box harness: the real server on a random port over a fresh memory store, driven with
 * fetch. Runners are answered by a test gateway (probe ok unless the endpoint says
 * "unreachable"); the runner-client suites cover the real protocol.
 */
import * as HttpServer from "effect/http/HttpServer"
import {
  AccountService,
  type AgentTokens,
  type DispatcherOptions,
  type ApiTokenView,
  type CapabilitiesOptions,
  type CurrentUser,
  type InputFetcher,
  type IssuedToken,
  type StoreServices,
  type ManagedRunnerAdminView,
  type ManagedRunnerView,
  PlatformLive,
  type RunnerView,
  type RunnerEvent,
  RunnerGateway,
  RunnerProbe,
  RunnerUnreachable,
  type Template,
  type TemplateListItem,
  TierPolicy,
  type TierTableOverride,
  type UseCaseServices,
  type User,
  useCasesLayer,
  type WorkflowDetail,
  type WorkflowSummary
} from "@wes/core"
import { MemoryStoreLive } from "@wes/storage-memory"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Queue from "effect/Queue"
import { RunnerGatewayNode } from "@wes/runner-client"
import { AgentEndpoint } from "../src/AgentEndpoint.js"
import { AgentHub, type AgentHubOptions } from "../src/AgentHub.js"
import { RunnerAgentsLive } from "../src/AgentRunnerAgents.js"
import { meteredGateway } from "../src/RunnerMetrics.js"
import { httpLayer, type HttpOptions } from "../src/Server.js"
import { jsonLoggerLayer } from "../src/Logging.js"
import { defaultRateLimit } from "../src/RateLimit.js"
import { denyPrivateGateway, denyPrivateProbe, type Resolver } from "../src/RunnerAddressPolicy.js"
import { webhookDeliveryLayer, type WebhookDeliveryOptions } from "../src/WebhookDelivery.js"
import { retentionLayer, type RetentionLayerOptions } from "../src/Retention.js"

export const ADMIN_TOKEN = "admin-secret-for-tests-0123456789abcdef"

const unexpected = (method: string) => Effect.die(new Error(`unexpected RunnerGateway.${method} call`))

export const TestGateway = Layer.succeed(RunnerGateway, RunnerGateway.of({
  probe: (runner) =>
    runner.endpoint.includes("unreachable")
      ? Effect.fail(new RunnerUnreachable({ runner_id: runner.id, message: "connect ECONNREFUSED" }))
      : Effect.succeed({ version: "0.3.64", devices: [], jobs_api: false }),
  nodeReplacements: () => Effect.succeedNone,
  cancel: () => Effect.void,
  // No capabilities to read: they stay unknown (the runner stays eligible).
  objectInfo: (runner) => Effect.fail(new RunnerUnreachable({ runner_id: runner.id, message: "GET /object_info: no answer" })),
  uploadInput: () => unexpected("uploadInput"),
  submit: () => unexpected("submit"),
  queue: () => unexpected("queue"),
  history: () => unexpected("history"),
  status: () => unexpected("status"),
  download: () => unexpected("download"),
  // A socket that never says anything.
  events: () => Queue.bounded<RunnerEvent>(1)
}))

/** Timeouts and backoff of the real ComfyUI client short enough for tests. */
const realGatewayOptions = {
  requestTimeout: "3 seconds",
  reconnectInitialDelay: "50 millis",
  reconnectMaxDelay: "500 millis",
  heartbeatInterval: "500 millis",
  heartbeatTimeout: "1 second"
} as const

/** The real ComfyUI client with timeouts and backoff short enough for tests. */
export const RealGateway = RunnerGatewayNode(realGatewayOptions)

/** The real client reaching agent runners through the hub's sessions too (issue 34). */
const AgentGateway = Layer.unwrap(Effect.gen(function*() {
  const hub = yield* AgentHub
  return RunnerGatewayNode({ ...realGatewayOptions, agents: hub.sessions })
}))

/** Dispatcher timings for tests: fast scans and reconciliation, quick retries. */
export const fastDispatch: Partial<DispatcherOptions> = {
  scanInterval: "100 millis",
  claimInterval: "100 millis",
  reconcileInterval: "300 millis",
  retryDelay: "50 millis",
  retryDelayMax: "200 millis",
  idleAfter: "2 seconds",
  queueRefreshInterval: "50 millis",
  runnerRefreshInterval: "100 millis"
}

export interface TestServer {
  readonly url: string
  /** Fetch relative to the server. */
  readonly fetch: (path: string, init?: RequestInit) => Promise<Response>
  /** A new user of `tier` with a fresh token. */
  readonly user: (tier?: "free" | "pro" | "plus") => Promise<{ readonly id: string; readonly token: string; readonly auth: Record<string, string> }>
  readonly logs: ReadonlyArray<string>
  /** Runs an effect against the server's use cases (what an endpoint beside /v1 calls, e.g. `AgentTokens`). */
  readonly run: <A, E>(effect: Effect.Effect<A, E, UseCaseServices>) => Promise<A>
  readonly close: () => Promise<void>
}

export const startServer = async (options: {
  readonly http?: Partial<HttpOptions>
  readonly tiers?: TierTableOverride
  readonly gateway?: Layer.Layer<RunnerGateway>
  /** Runs the dispatcher (with these timings) and the real runner client. */
  readonly dispatcher?: Partial<DispatcherOptions>
  /** The store (default: a fresh memory store). */
  readonly store?: Layer.Layer<StoreServices, unknown>
  /** Refuse private runner addresses (as without WES_RUNNER_ALLOW_PRIVATE), resolving host names with this resolver. */
  readonly denyPrivate?: Resolver
  /** How runners' capabilities are read and cached. */
  readonly capabilities?: Partial<CapabilitiesOptions>
  /** Runs the webhook delivery pool with these options (and allows private webhook URLs unless they deny them). */
  readonly webhooks?: WebhookDeliveryOptions
  /** The server's clock (default: the real one); a test moves a `movableClock` instead of waiting. */
  readonly clock?: Layer.Layer<never>
  /** Runs the retention sweeper with these options (Retention.ts). */
  readonly retention?: RetentionLayerOptions
  /** How URL inputs are fetched (default: none, so they are refused as not enabled). */
  readonly inputFetcher?: Layer.Layer<InputFetcher>
  /**
   * The agent endpoint, hub and RunnerAgents of `wes serve` (issue 34), with these hub timings;
   * `tokens` replaces the store's runner tokens for the endpoint.
   */
  readonly agents?: { readonly hub?: AgentHubOptions; readonly tokens?: Layer.Layer<AgentTokens> }
} = {}): Promise<TestServer> => {
  const logs: Array<string> = []
  const agents = options.agents
  const baseGateway = options.gateway ?? (options.dispatcher === undefined ? TestGateway : agents === undefined ? RealGateway : AgentGateway)
  // Measured as `wes serve` measures it (RunnerMetrics.ts).
  const gateway = meteredGateway.pipe(Layer.provide(
    options.denyPrivate === undefined ? baseGateway : denyPrivateGateway(options.denyPrivate).pipe(Layer.provide(baseGateway))
  ))
  const probe = RunnerProbe.layer("2 seconds").pipe(Layer.provide(gateway))
  const useCasesOptions = options.capabilities === undefined ? {} : { capabilities: options.capabilities }
  const useCases = options.dispatcher === undefined
    ? useCasesLayer(useCasesOptions)
    : useCasesLayer({ ...useCasesOptions, dispatcher: options.dispatcher })
  const core = useCases.pipe(
    Layer.provideMerge(Layer.mergeAll(
      agents === undefined ? Layer.empty : RunnerAgentsLive,
      gateway,
      options.denyPrivate === undefined ? probe : denyPrivateProbe(options.denyPrivate).pipe(Layer.provide(probe)),
      TierPolicy.layer(options.tiers ?? {}),
      options.inputFetcher ?? Layer.empty,
      PlatformLive
    )),
    // The hub is always there (a map of nothing without the endpoint), as in `wes serve`.
    Layer.provideMerge(Layer.merge(options.store ?? MemoryStoreLive, AgentHub.layer(agents?.hub)))
  )
  const http = httpLayer({
    port: 0,
    host: "127.0.0.1",
    rateLimit: "off",
    trustedProxies: 0,
    adminToken: Option.some(Redacted.make(ADMIN_TOKEN)),
    sseKeepAlive: "15 seconds",
    shutdownGrace: "1 second",
    ...(options.webhooks === undefined ? {} : { webhooks: { allowPrivate: !options.webhooks.denyPrivate } }),
    ...options.http
  }).pipe(Layer.provide(
    agents === undefined ? Layer.empty : agents.tokens === undefined ? AgentEndpoint.layer : AgentEndpoint.layer.pipe(Layer.provide(agents.tokens))
  ))
  const delivery = Layer.merge(
    options.webhooks === undefined ? Layer.empty : webhookDeliveryLayer(options.webhooks),
    options.retention === undefined ? Layer.empty : retentionLayer(options.retention)
  )
  const runtime = ManagedRuntime.make(Layer.merge(http, delivery).pipe(
    Layer.provideMerge(core),
    Layer.provide(jsonLoggerLayer((line) => logs.push(line))),
    Layer.provide(options.clock ?? Layer.empty)
  ))
  const server = await runtime.runPromise(HttpServer.HttpServer)
  const address = server.address
  if (address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
  const url = `http://127.0.0.1:${address.port}`
  const fetchAt = (path: string, init?: RequestInit) => fetch(url + path, init)
  return {
    url,
    fetch: fetchAt,
    logs,
    user: async (tier = "free") => {
      const { id, token } = await runtime.runPromise(Effect.gen(function*() {
        const accounts = yield* AccountService
        const u = yield* accounts.createUser({ tier })
        const issued = yield* accounts.issueToken(u.id, { name: "test" })
        return { id: u.id as string, token: issued.token }
      }))
      return { id, token, auth: { authorization: `Bearer ${token}` } }
    },
    run: (effect) => runtime.runPromise(effect),
    close: () => runtime.dispose()
  }
}

/** The smoke workflow of comfyui-protocol.md section 10. */
export const smokeWorkflow = (inputs: Record<string, unknown> = {}) => ({
  "1": { class_type: "EmptyImage", inputs: { width: 64, height: 64, batch_size: 1, color: 255, ...inputs } },
  "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
  "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "smoke/run" } }
})

/** Pass as the workflow to leave `workflow_json` out of a form. */
export const NO_WORKFLOW = Symbol("no workflow_json")

/** A multipart form with a workflow_json file and extra fields (strings, or [bytes, filename] files). */
export const workflowForm = (fields: Record<string, string | readonly [Uint8Array<ArrayBuffer> | string, string]>, json: unknown = smokeWorkflow()): FormData => {
  const form = new FormData()
  if (json !== NO_WORKFLOW) form.append("workflow_json", new Blob([JSON.stringify(json)], { type: "application/json" }), "workflow.json")
  for (const [key, value] of Object.entries(fields)) {
    if (typeof value === "string") form.append(key, value)
    else form.append(key, new Blob([value[0]]), value[1])
  }
  return form
}

export const json = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json", ...headers },
  body: JSON.stringify(body)
})

/**
 * A response's JSON body, typed as the caller expects it: fetch's `json()` is `unknown`. A cast, not a
 * check: the assertions that follow are what verify the shape.
 */
export const readJson = <T>(res: Response): Promise<T> => res.json() as Promise<T>

// The contract's JSON shapes: the encoded (wire) side of the core's schemas.
export type WorkflowSummaryJson = typeof WorkflowSummary.Encoded
export type WorkflowDetailJson = typeof WorkflowDetail.Encoded
export type RunnerJson = typeof RunnerView.Encoded
export type TemplateJson = typeof Template.Encoded
export type TemplateListItemJson = typeof TemplateListItem.Encoded
export type ManagedRunnerViewJson = typeof ManagedRunnerView.Encoded
export type ManagedRunnerJson = typeof ManagedRunnerAdminView.Encoded
export type CurrentUserJson = typeof CurrentUser.Encoded
export type UserJson = typeof User.Encoded
export type IssuedTokenJson = typeof IssuedToken.Encoded
export type ApiTokenViewJson = typeof ApiTokenView.Encoded

/** The contract's error body; `details` on 400s. */
export interface ErrorBody {
  readonly status: number
  readonly message: string
  readonly details?: ReadonlyArray<{ readonly field: string; readonly message: string }>
}

export interface WorkflowListJson {
  readonly workflows: ReadonlyArray<WorkflowSummaryJson>
  readonly total: number
}
export interface TemplateListJson {
  readonly templates: ReadonlyArray<TemplateListItemJson>
  readonly total: number
}
export interface RunnerListJson {
  readonly runners: ReadonlyArray<RunnerJson>
  readonly total: number
}
export interface ManagedRunnerViewListJson {
  readonly runners: ReadonlyArray<ManagedRunnerViewJson>
  readonly total: number
}
export interface ManagedRunnerListJson {
  readonly runners: ReadonlyArray<ManagedRunnerJson>
  readonly total: number
}

export { defaultRateLimit }
