/**
 * The server's wiring. Reading the layers top to bottom draws the system: HTTP edge (rate limit,
 * request log, routes, OpenAPI, docs, dashboard) -> handlers -> use cases (@wes/core) -> store + runner
 * gateway + platform services.
 */
import * as HttpApiBuilder from "effect/unstable/httpapi/HttpApiBuilder"
import type * as HttpServer from "effect/unstable/http/HttpServer"
import type { ServeError } from "effect/unstable/http/HttpServerError"
import * as HttpServerResponse from "effect/unstable/http/HttpServerResponse"
import * as OpenApi from "effect/unstable/httpapi/OpenApi"
import * as NodeContext from "@effect/platform-node/NodeContext"
import type { StoreServices, UseCaseServices } from "@wes/core"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as Redacted from "effect/Redacted"
import { randomUUID } from "node:crypto"
import { createServer, type Server as NodeServer } from "node:http"
import type { Duplex } from "node:stream"
import { adminHttp } from "./AdminHttp.js"
import { type Authentication, WesApi } from "@wes/api"
import { adminAuthenticationLayer, AuthenticationLive } from "./Auth.js"
import { dashboardRoutes } from "./DashboardHttp.js"
import { docsPage } from "./DocsPage.js"
import { type PlainRoute, serveApi } from "./edge/ApiApp.js"
import { jsonResponse } from "./edge/Failures.js"
import { infoLines, requestLog } from "./Logging.js"
import { metricsRoute } from "./Metrics.js"
import { MultipartReader } from "./MultipartReader.js"
import * as NodeServerLayer from "./NodeServer.js"
import { makeRateLimiter, rateLimitMiddleware, type RateLimitSettings } from "./RateLimit.js"
import { managedRunnersHttp, runnersHttp, templatesHttp, userHttp } from "./ResourcesHttp.js"
import { requestSpan } from "./RequestSpan.js"
import { Shutdown } from "./Shutdown.js"
import { SseHub } from "./SseHub.js"
import { systemHttp } from "./SystemHttp.js"
import type { Resolver } from "./RunnerAddressPolicy.js"
import { webhookHttp, webhookUrlCheckLayer } from "./WebhooksHttp.js"
import { workflowsHttp } from "./WorkflowsHttp.js"

/** Requests that are never spans: probes and scrapes, many and alike. */
const UNTRACED_ROUTES: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics"])

/** The routes beside the API: its OpenAPI document, the docs page, the dashboard and the metrics. */
const plainRoutes = (metricsToken: Option.Option<Redacted.Redacted<string>>) =>
  Effect.gen(function*() {
    const spec = jsonResponse(OpenApi.fromApi(WesApi), 200)
    const page = HttpServerResponse.html(docsPage())
    const routes: ReadonlyArray<PlainRoute> = [
      { path: "/v1/openapi.json", handler: Effect.succeed(spec) },
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
  readonly sseKeepAlive: Duration.DurationInput
  /** Open connections are closed this long after shutdown begins, if they have not finished. */
  readonly shutdownGrace: Duration.DurationInput
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

/**
 * Every group of the API's handlers over the use cases, following workflows through the SseHub:
 * what `apiApp` (edge/ApiApp.ts) compiles into the server's router.
 */
const apiLayer = (options: Pick<HttpOptions, "adminToken" | "sseKeepAlive" | "authentication" | "webhooks">) =>
  HttpApiBuilder.api(WesApi).pipe(
    Layer.provide([
      userHttp,
      workflowsHttp,
      webhookHttp,
      templatesHttp,
      runnersHttp,
      managedRunnersHttp,
      systemHttp,
      adminHttp
    ]),
    Layer.provide([options.authentication ?? AuthenticationLive, adminAuthenticationLayer(options.adminToken)]),
    Layer.provide(SseHub.layer({ keepAlive: options.sseKeepAlive })),
    Layer.provide(webhookUrlCheckLayer({
      denyPrivate: options.webhooks?.allowPrivate !== true,
      resolve: options.webhooks?.resolve
    }))
  )

/**
 * The HTTP server over the use cases: listens on `options.port`, and on shutdown stops taking
 * requests, ends event streams, lets in-flight requests finish, then closes what is left.
 */
export const httpLayer = (options: HttpOptions): Layer.Layer<
  HttpServer.HttpServer,
  ServeError,
  UseCaseServices | StoreServices
> => {
  const limiter = options.rateLimit === "off" ? undefined : makeRateLimiter(options.rateLimit)
  const middleware = limiter === undefined ? undefined : rateLimitMiddleware(limiter, { trustedProxies: options.trustedProxies, exempt })
  const served = Layer.unwrapEffect(Effect.map(plainRoutes(options.metricsToken ?? Option.none()), (routes) =>
    serveApi({
      routes,
      adminEnabled: Option.isSome(options.adminToken),
      // Without an exporter, per-request spans would only cost time.
      around: options.traced === true
        ? (route, request, program) => (UNTRACED_ROUTES.has(route) ? program : requestSpan(route, request, program))
        : undefined,
      middleware
    })))
  return served.pipe(
    Layer.provide(apiLayer(options)),
    // Closed before the listener: readiness turns 503 and event streams end first.
    Layer.provide(Shutdown.layer),
    Layer.provideMerge(Layer.unwrapEffect(Effect.map(infoLines, (info) => {
      const log = (fields: Record<string, unknown>) => info("request", fields, randomUUID())
      return NodeServerLayer.layer(() => answerClientErrors(createServer(), log), {
        port: options.port,
        host: options.host,
        shutdownGrace: options.shutdownGrace,
        requestLog
      })
    }))),
    Layer.provide(MultipartReader.layer()),
    Layer.provide(NodeContext.layer)
  )
}
