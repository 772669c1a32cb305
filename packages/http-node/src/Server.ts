/**
 * The server's wiring. Reading the layers top to bottom draws the system: HTTP edge (request log,
 * rate limit, routes, OpenAPI, docs, dashboard, metrics: Edge.ts) -> handlers -> use cases
 * (@wes/core) -> store + runner gateway + platform services; node's HTTP server through
 * @effect/platform-node's NodeHttpServer.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type { StoreServices, TierPolicy, UseCaseServices } from "@wes/core"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as HttpServer from "effect/http/HttpServer"
import type { ServeError } from "effect/http/HttpServerError"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { randomUUID } from "node:crypto"
import { createServer, type Server as NodeServer } from "node:http"
import type { Duplex } from "node:stream"
import { type Authentication, WesApi } from "@wes/api"
import { adminHttp } from "./AdminHttp.js"
import { AgentEndpoint } from "./AgentEndpoint.js"
import { adminAuthenticationLayer, AuthenticationLive } from "./Auth.js"
import { dashboardRoutes } from "./DashboardHttp.js"
import { docsPage } from "./DocsPage.js"
import * as Edge from "./Edge.js"
import { infoLines } from "./Logging.js"
import { metricsRoute } from "./Metrics.js"
import { MultipartReader } from "./MultipartReader.js"
import { OutputDelivery } from "./OutputResponses.js"
import { makeRateLimiter, rateLimitMiddleware, type RateLimitSettings } from "./RateLimit.js"
import { managedRunnersHttp, runnersHttp, templatesHttp, userHttp } from "./ResourcesHttp.js"
import type { Resolver } from "./RunnerAddressPolicy.js"
import { Shutdown } from "./Shutdown.js"
import { SseHub } from "./SseHub.js"
import { systemHttp } from "./SystemHttp.js"
import { webhookHttp, webhookUrlCheckLayer } from "./WebhooksHttp.js"
import { workflowsHttp } from "./WorkflowsHttp.js"

/** Requests that are never spans: probes and scrapes, many and alike. */
const UNTRACED_ROUTES: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics"])

/** The routes beside the API: the docs page, the dashboard and the metrics. */
const plainRoutes = (metricsToken: Option.Option<Redacted.Redacted<string>>) =>
  Effect.gen(function*() {
    const page = HttpServerResponse.html(docsPage())
    const routes: ReadonlyArray<Edge.PlainRoute> = [
      { path: "/docs", handler: Effect.succeed(page) },
      ...(yield* dashboardRoutes),
      yield* metricsRoute(metricsToken)
    ]
    return routes
  })

export interface HttpOptions {
  readonly port: number
  readonly host: string
  readonly rateLimit: RateLimitSettings | "off"
  /** Proxies in front of the server that append to X-Forwarded-For (0: use the socket's address). */
  readonly trustedProxies: number
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  /** `GET /metrics` asks for this bearer token (none: open, like /healthz). */
  readonly metricsToken?: Option.Option<Redacted.Redacted<string>> | undefined
  readonly sseKeepAlive: Duration.Input
  /** Open connections are closed this long after shutdown begins, if they have not finished. */
  readonly shutdownGrace: Duration.Input
  /**
   * Who the caller of a /v1 request is. Default: WES's bearer API tokens. An embedder with its own
   * authentication (a gateway that already checked the caller) provides its own layer.
   */
  readonly authentication?: Layer.Layer<Authentication, never, UseCaseServices> | undefined
  /**
   * Whether a tracer exports spans (Tracing.ts): then each request is a span named by method and
   * declared route (`GET /v1/workflow/:id`), except the probes and scrapes. Default: no spans.
   */
  readonly traced?: boolean | undefined
  /**
   * Webhook URLs (PUT /v1/webhook, a workflow's webhook_url) on private, loopback, link-local or
   * unspecified addresses are refused unless `allowPrivate` (default: refused), resolving host
   * names with `resolve` (default: the system's).
   */
  readonly webhooks?: { readonly allowPrivate: boolean; readonly resolve?: Resolver | undefined } | undefined
  /** Output downloads redirect to the store's signed URL when it serves one (`WES_BLOB_REDIRECT`; default: streamed). */
  readonly outputs?: typeof OutputDelivery.Service | undefined
}

/**
 * Requests node's HTTP parser refuses before any route sees them still get the contract's body:
 * a request line and headers over node's 16 KB limit -> 431, anything else malformed -> 400
 * (node's default answers carry no body).
 */
export const answerClientErrors = (server: NodeServer, log: (fields: Record<string, unknown>) => void = () => {}): NodeServer => {
  // node reports a parse error again for every later chunk of the same request: answer once.
  const answered = new WeakSet<Duplex>()
  return server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    if (answered.has(socket)) return
    if (!socket.writable || error.code === "ECONNRESET") return void socket.destroy()
    answered.add(socket)
    const [status, reason, message] = error.code === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large", "The request line and headers exceed 16 KB"]
      : error.code === "HPE_REQUEST_TIMEOUT" || error.code === "ERR_HTTP_REQUEST_TIMEOUT"
      ? [408, "Request Timeout", "The request was not received in time"]
      : [400, "Bad Request", "The HTTP request is malformed"]
    const body = JSON.stringify({ status, message })
    // Logged like any other answer (no route saw it, so there is no method or path to name).
    log({ status, reason: message })
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `Connection: close\r\n\r\n${body}`
    )
    // Read (and drop) what the client is still sending: closing with unread data would reset the
    // connection, and the client would never see the answer.
    socket.resume()
    setTimeout(() => socket.destroy(), 5_000).unref()
  })
}

/** Paths outside the public rate limit: health checks, metrics and the operator API. */
const exempt = (url: string) => url.startsWith("/healthz") || url.startsWith("/readyz") || url.startsWith("/admin/") || url.startsWith("/metrics")

const isAdminPath = (path: string) => path === "/admin" || path.startsWith("/admin/")

/**
 * Every group of the API's handlers over the use cases, following workflows through the SseHub:
 * what HttpApiBuilder routes (Edge.ts). Each group is built seeing only what it uses (Handlers.ts).
 */
const apiLayer = (options: Pick<HttpOptions, "adminToken" | "sseKeepAlive" | "authentication" | "webhooks" | "outputs">) =>
  Layer.mergeAll(userHttp, workflowsHttp, webhookHttp, templatesHttp, runnersHttp, managedRunnersHttp, systemHttp, adminHttp).pipe(
    Layer.provide([options.authentication ?? AuthenticationLive, adminAuthenticationLayer(options.adminToken)]),
    Layer.provide(SseHub.layer({ keepAlive: options.sseKeepAlive })),
    Layer.provide(options.outputs === undefined ? Layer.empty : Layer.succeed(OutputDelivery, options.outputs)),
    Layer.provide(webhookUrlCheckLayer({
      denyPrivate: options.webhooks?.allowPrivate !== true,
      resolve: options.webhooks?.resolve
    }))
  )

/**
 * The HTTP server over the use cases: listens on `options.port`, and on shutdown turns readiness
 * 503 and ends event streams, then stops taking requests, lets in-flight requests finish for
 * `shutdownGrace`, and closes what is left.
 */
export const httpLayer = (options: HttpOptions): Layer.Layer<
  HttpServer.HttpServer,
  ServeError,
  UseCaseServices | StoreServices | TierPolicy
> => {
  const limiter = options.rateLimit === "off" ? undefined : makeRateLimiter(options.rateLimit)
  const middleware = limiter === undefined ? undefined : rateLimitMiddleware(limiter, { trustedProxies: options.trustedProxies, exempt })
  const served = Layer.unwrap(Effect.map(plainRoutes(options.metricsToken ?? Option.none()), (routes) =>
    Edge.serve(WesApi, {
      openapiPath: "/v1/openapi.json",
      routes,
      // Without the operator API every /admin path is missing, whatever the method (404, not 405).
      hidden: Option.isSome(options.adminToken) ? undefined : isAdminPath,
      middleware,
      untraced: UNTRACED_ROUTES,
      // Without an exporter, per-request spans would only cost time.
      traced: options.traced === true
    })))

  let node: NodeServer | undefined
  // The agent endpoint (issue 34), when the server has one: it takes its path's WebSocket upgrades.
  const listener = Layer.unwrap(Effect.map(Effect.all([infoLines, Effect.serviceOption(AgentEndpoint)]), ([info, agents]) =>
    NodeHttpServer.layer(() => {
      node = answerClientErrors(createServer(), (fields) => info("request", fields, randomUUID()))
      if (Option.isSome(agents)) agents.value.attach(node)
      return node
    }, {
      port: options.port,
      host: options.host,
      gracefulShutdownTimeout: options.shutdownGrace
    })))

  // Built last, so its finalizer runs first: readiness turns 503 and event streams end before
  // the listener stops taking requests and waits for those in flight. While it waits, connections
  // that fall idle (a stream that just ended) are closed; past the grace period, every one still
  // open is (timers that do not keep the process alive).
  const stopping = Layer.effectDiscard(Effect.gen(function*() {
    const { signal } = yield* Shutdown
    yield* Effect.addFinalizer(() =>
      Effect.andThen(
        Deferred.succeed(signal, undefined),
        Effect.sync(() => {
          const idle = setInterval(() => node?.closeIdleConnections(), 100).unref()
          setTimeout(() => {
            clearInterval(idle)
            node?.closeAllConnections()
          }, Duration.toMillis(options.shutdownGrace)).unref()
        })
      ))
  }))

  return stopping.pipe(
    Layer.provideMerge(served),
    Layer.provide(apiLayer(options)),
    Layer.provide([Shutdown.layer, MultipartReader.layer()]),
    Layer.provideMerge(listener)
  )
}
