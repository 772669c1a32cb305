/**
 * The server's one router, derived from the declaration: every endpoint of the API with its
 * group's handler (ApiGroups.ts), compiled once at start (Endpoints.ts), beside the few routes
 * that are not part of the contract (the OpenAPI document, the docs page, the dashboard, the
 * metrics). An unknown path is 404; a known path with another method 405 with `Allow`. Every
 * failure is answered once, for the whole server, by Failures.ts.
 */
import * as HttpApi from "effect/unstable/httpapi/HttpApi"
import type * as HttpApiMiddleware from "effect/unstable/httpapi/HttpApiMiddleware"
import type * as HttpApp from "effect/unstable/http/HttpEffect"
import type * as HttpMiddleware from "effect/unstable/http/HttpMiddleware"
import * as HttpServer from "effect/unstable/http/HttpServer"
import * as HttpServerRequest from "effect/unstable/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/unstable/http/HttpServerResponse"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Scope from "effect/Scope"
import * as Layer from "effect/Layer"
import * as FindMyWay from "find-my-way-ts"
import { MethodNotAllowedError, notFound } from "@wes/api"
import { MultipartReader } from "../MultipartReader.js"
import type { NodeRequest } from "../NodeRequest.js"
import { GroupHandlersTag } from "./ApiGroups.js"
import { bodyReader } from "./Bodies.js"
import { compileEndpoint, type Middleware, type Run } from "./Endpoints.js"
import { failureResponse, jsonResponse } from "./Failures.js"

/** A route outside the API's declaration (not JSON, or not part of the contract). */
export interface PlainRoute {
  readonly path: FindMyWay.PathInput
  readonly handler: Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>
}

interface Route {
  /** The declared path, `/v1/workflow/:id`: the request log's and the span's name for the route. */
  readonly path: string
  readonly run: Run
}

export interface ApiAppOptions {
  readonly routes: ReadonlyArray<PlainRoute>
  /** Without the operator API every /admin path is missing, whatever the method (404, not 405). */
  readonly adminEnabled: boolean
  /** Wraps a routed request (a span, when a tracer exports them). */
  readonly around?: ((path: string, request: NodeRequest, program: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, unknown>) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, unknown>) | undefined
}

/**
 * The app and the context its handlers were built in (every group's), which the server runs
 * each request with.
 */
export const apiApp = (options: ApiAppOptions) =>
  Effect.gen(function*() {
    const { api, context } = yield* HttpApi.Api
    const readBody = bodyReader(yield* MultipartReader)
    const router = FindMyWay.make<Route>()
    // The methods of each declared path, in the order declared (`Allow` of a 405).
    const methods = new Map<string, Array<string>>()
    const add = (method: string, path: FindMyWay.PathInput, run: Run) => {
      router.on(method, path, { path, run })
      methods.set(path, [...(methods.get(path) ?? []), method])
    }
    const middlewares = (tags: ReadonlySet<HttpApiMiddleware.TagClassAny>): ReadonlyArray<Middleware> =>
      [...tags].map((tag) => ({ tag, implementation: Context.unsafeGet(context, tag as unknown as Context.Tag<unknown, unknown>) }))
    let groupsContext = Context.empty() as Context.Context<never>
    for (const group of Object.values(api.groups)) {
      const built = Context.unsafeGet(context, GroupHandlersTag(api.identifier, group.identifier))
      // Not the layer's own scope: each request has its own (the server's).
      groupsContext = Context.merge(groupsContext, Context.omit(Scope.Scope)(built.context) as Context.Context<never>)
      const outer = [...middlewares(group.middlewares), ...middlewares(api.middlewares)]
      for (const handler of built.handlers) {
        const { endpoint } = handler
        const run = compileEndpoint(handler, [...middlewares(endpoint.middlewares), ...outer], readBody)
        add(endpoint.method, endpoint.path as FindMyWay.PathInput, run)
      }
    }
    for (const route of options.routes) add("GET", route.path, () => route.handler)
    const paths = FindMyWay.make<ReadonlyArray<string>>()
    for (const [path, list] of methods) paths.on("GET", path as FindMyWay.PathInput, list)

    const answerFailure = failureResponse(api)
    const notRouted = (request: NodeRequest): Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> => {
      const path = request.url.split("?")[0]!
      if (!options.adminEnabled && (path === "/admin" || path.startsWith("/admin/"))) return Effect.fail(notFound())
      const allowed = paths.find("GET", path)?.handler
      if (allowed === undefined) return Effect.fail(notFound())
      const allow = allowed.join(", ")
      return Effect.succeed(jsonResponse(new MethodNotAllowedError({ status: 405, message: `Method not allowed: use ${allow}` }), 405, { allow }))
    }

    const app = Effect.withFiberRuntime((fiber) => {
      // The server provides every request as a NodeRequest (NodeServer.ts).
      const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest) as NodeRequest
      let found = router.find(request.method, request.url)
      if (found === undefined && request.method === "HEAD") found = router.find("GET", request.url)
      if (found === undefined) return Effect.catchCause(notRouted(request), answerFailure)
      const { path, run } = found.handler
      if (request.record !== undefined) request.record.route = path
      const program = Effect.catchCause(run(request, found.params, found.searchParams), answerFailure)
      return options.around === undefined ? program : options.around(path, request, program)
    }) as HttpApp.Default<unknown>
    return { app, context: groupsContext }
  })

/**
 * Serves the API in context (`HttpApiBuilder.api` over the groups' handlers) on the `HttpServer`
 * in context, through `middleware` (the rate limit); every request runs with the context the
 * handlers were built in, merged once here rather than per request.
 */
export const serveApi = (options: ApiAppOptions & { readonly middleware?: HttpMiddleware.HttpMiddleware | undefined }) =>
  Layer.effectDiscard(Effect.gen(function*() {
    const { app, context } = yield* apiApp(options)
    const serve = options.middleware === undefined ? HttpServer.serveEffect(app) : HttpServer.serveEffect(app, options.middleware)
    yield* Effect.mapInputContext(serve, (input: Context.Context<HttpServer.HttpServer | Scope.Scope>) => Context.merge(input, context))
  }))
