/**
 * The HTTP edge over an HttpApi declaration: HttpApiBuilder's routes (one per endpoint, with its
 * group's handlers) and the few routes beside the contract (the OpenAPI document, the docs page,
 * the dashboard, the metrics) in one HttpRouter, served on the `HttpServer` in context
 * (NodeHttpServer). Every answer the handlers do not give themselves is given here, once, in the
 * contract's `{status, message, details?}` bodies:
 *   - a request the declared schemas refuse (path, headers, query, body) is the 400 naming each field;
 *   - an unknown path is 404, a known path with another method 405 with `Allow` (declared order);
 *   - anything else (a defect, an answer a handler's own schema refuses) is a 500 without details, logged.
 * Declared errors are answered by HttpApiBuilder with the declared error schemas (@wes/api).
 */
import { fromSchemaError, ValidationError } from "@wes/core"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as FindMyWay from "effect/http/FindMyWay"
import * as HttpMiddleware from "effect/http/HttpMiddleware"
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerError from "effect/http/HttpServerError"
import { HttpServerRequest } from "effect/http/HttpServerRequest"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { HttpApiSchemaError } from "effect/http-api/HttpApiError"
import type * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { BadRequest, InternalError, MethodNotAllowedError, notFound, NotFoundStatus } from "@wes/api"
import { accessLog, routeNamed } from "./AccessLog.js"

/** A route beside the declaration (not JSON, or not part of the contract); GET (and HEAD). */
export interface PlainRoute {
  readonly path: HttpRouter.PathInput
  readonly handler: Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest>
}

/** Server middleware that needs nothing but the request. */
export type Middleware = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
) => Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest>

export interface EdgeOptions {
  /** Where the OpenAPI document of the declaration is served. */
  readonly openapiPath?: `/${string}` | undefined
  readonly routes?: ReadonlyArray<PlainRoute> | undefined
  /** Paths that answer 404 whatever the method (the operator API when it is off). */
  readonly hidden?: ((path: string) => boolean) | undefined
  /** Runs around every request inside the access log, and may answer in its place (the rate limit). */
  readonly middleware?: Middleware | undefined
  /** Paths whose requests are never spans: probes and scrapes, many and alike. */
  readonly untraced?: ReadonlySet<string> | undefined
  /** Whether requests are spans at all (when a tracer exports them). */
  readonly traced?: boolean | undefined
}

const pathOf = (url: string): string => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}

/** The paths served, with their methods in declared order: the `Allow` of a 405, and the route of a span. */
interface RouteTable {
  /** The methods a path is served with (none: an unknown path). */
  readonly allowed: (url: string) => ReadonlyArray<string> | undefined
  /** The declared route a request goes to, if any (HEAD goes where GET does). */
  readonly routeOf: (method: string, url: string) => string | undefined
}

const routeTable = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  plain: ReadonlyArray<string>
): RouteTable => {
  const methods = new Map<string, Array<string>>()
  const add = (method: string, path: string) => methods.set(path, [...(methods.get(path) ?? []), method])
  HttpApi.reflect(api, { onGroup: () => {}, onEndpoint: ({ endpoint }) => add(endpoint.method, endpoint.path) })
  for (const path of plain) add("GET", path)
  const paths = FindMyWay.make<{ readonly path: string; readonly methods: ReadonlyArray<string> }>({ ignoreDuplicateSlashes: false })
  for (const [path, list] of methods) paths.on("GET", path as FindMyWay.PathInput, { path, methods: list })
  const find = (url: string) => paths.find("GET", url)?.handler
  return {
    allowed: (url) => find(url)?.methods,
    routeOf: (method, url) => {
      const found = find(url)
      return found !== undefined && (found.methods.includes(method) || (method === "HEAD" && found.methods.includes("GET"))) ? found.path : undefined
    }
  }
}

const json = (body: unknown, status: number, headers?: Record<string, string>) =>
  HttpServerResponse.jsonUnsafe(body, { status, ...(headers === undefined ? {} : { headers }) })

const encodeBadRequest = Schema.encodeUnknownSync(BadRequest)
const encodeNotFound = Schema.encodeUnknownSync(NotFoundStatus)
const encodeMethodNotAllowed = Schema.encodeUnknownSync(MethodNotAllowedError)
const encodeInternal = Schema.encodeUnknownSync(InternalError)

/** The contract's 400 for `error`. */
const badRequestResponse = (error: ValidationError) => json(encodeBadRequest(error), 400)

const internalError = new InternalError({ status: 500, message: "Internal server error" })
const internalResponse = (error: InternalError = internalError) => json(encodeInternal(error), 500)

/** The parts of a request its endpoint's schemas decode: a refusal of one of them is the client's 400. */
const REQUEST_PARTS: ReadonlySet<HttpApiSchemaError["kind"]> = new Set(["Params", "Headers", "Query", "Payload"])

/** Turns what a request left unanswered into its answer; an interruption (the client left) stays one. */
const answers = (table: RouteTable, hidden: (path: string) => boolean) => {
  const notRouted = (request: HttpServerRequest) => {
    const path = pathOf(request.url)
    const allowed = hidden(path) ? undefined : table.allowed(request.url)
    if (allowed === undefined) return json(encodeNotFound(notFound()), 404)
    const allow = allowed.join(", ")
    return json(encodeMethodNotAllowed(new MethodNotAllowedError({ status: 405, message: `Method not allowed: use ${allow}` })), 405, { allow })
  }
  const unexpected = (cause: Cause.Cause<unknown>) => Effect.as(Effect.logError("unexpected error", cause), internalResponse())
  const answer = <E>(request: HttpServerRequest, cause: Cause.Cause<E>): Effect.Effect<HttpServerResponse.HttpServerResponse, E> => {
    if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause)
    const reason = cause.reasons.find((r) => r._tag !== "Interrupt")
    if (reason?._tag === "Fail") {
      const error = reason.error
      if (HttpServerError.isHttpServerError(error) && error.reason._tag === "RouteNotFound") return Effect.succeed(notRouted(request))
    } else if (reason?._tag === "Die") {
      const defect = reason.defect
      if (HttpApiSchemaError.is(defect) && REQUEST_PARTS.has(defect.kind)) return Effect.succeed(badRequestResponse(fromSchemaError(defect.cause)))
      if (defect instanceof ValidationError) return Effect.succeed(badRequestResponse(defect))
      // Logged where it happened (an upload that could not be stored).
      if (defect instanceof InternalError) return Effect.succeed(internalResponse(defect))
    }
    return unexpected(cause)
  }
  // Around the router, inside the server's own failure handling (which would answer an empty 404 or 500).
  return HttpRouter.middleware((app) => Effect.flatMap(HttpServerRequest, (request) => Effect.catchCause(app, (cause) => answer(request, cause))), {
    global: true
  })
}

/** Spans (when a tracer exports them): one per routed request, named by method and declared route. */
const tracing = (table: RouteTable, options: EdgeOptions) => {
  if (options.traced === false) return Layer.succeed(HttpMiddleware.TracerDisabledWhen)(() => true)
  const untraced = options.untraced ?? new Set<string>()
  // Both asked of the same request, once each, only when spans are exported.
  const routes = new WeakMap<HttpServerRequest, string | undefined>()
  const routeOf = (request: HttpServerRequest) => {
    if (routes.has(request)) return routes.get(request)
    const route = untraced.has(pathOf(request.url)) ? undefined : table.routeOf(request.method, request.url)
    routes.set(request, route)
    return route
  }
  return Layer.mergeAll(
    Layer.succeed(HttpMiddleware.TracerDisabledWhen)((request) => routeOf(request) === undefined),
    Layer.succeed(HttpMiddleware.SpanNameGenerator)((request) => `${request.method} ${routeOf(request) ?? pathOf(request.url)}`)
  )
}

/**
 * Serves `api` (its groups' handlers in context, HttpApiBuilder.group) and `options.routes` on the
 * `HttpServer` in context, through the access log and `options.middleware`.
 */
export const serve = <Id extends string, Groups extends HttpApiGroup.Constraint>(api: HttpApi.HttpApi<Id, Groups>, options: EdgeOptions = {}) => {
  const plain = options.routes ?? []
  const table = routeTable(api, [...(options.openapiPath === undefined ? [] : [options.openapiPath]), ...plain.map((r) => r.path)])
  const routes = HttpRouter.use((router) => router.addAll(plain.map((r) => HttpRouter.route("GET", r.path, r.handler))))
  const app = Layer.mergeAll(
    Layer.mergeAll(HttpApiBuilder.layer(api, { openapiPath: options.openapiPath }), routes).pipe(Layer.provide(routeNamed.layer)),
    answers(table, options.hidden ?? (() => false))
  )
  const limit = options.middleware
  // The server's middleware sees each request as the router answered it (and the response as it
  // goes out): the request log outermost, then the rate limit, which may answer in its place.
  const served = Layer.unwrap(Effect.map(accessLog, (log) =>
    HttpRouter.serve(app, {
      disableLogger: true,
      disableListenLog: true,
      routerConfig: { ignoreDuplicateSlashes: false },
      middleware: (effect) => log(limit === undefined ? effect : limit(effect))
    })))
  return served.pipe(Layer.provide(tracing(table, options)))
}
