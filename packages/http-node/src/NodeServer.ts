/**
 * WES's node:http adapter for Effect's `HttpServer`, in place of @effect/platform-node's
 * `NodeHttpServer`: the HttpApi app on top (routes, decoding, handlers, encoding) is the same,
 * only the way each request is run and answered differs (docs/decisions.md has the measurements):
 *   - one fiber per request, forked into a `FiberSet` the server owns: nothing runs unsupervised,
 *     and whatever is still running once the connections are closed at shutdown is interrupted;
 *   - the answer is written as soon as the app produces it, without waiting for node to flush it;
 *   - a body that writes itself (`NodeBody`: server-sent events) is handed the node response and
 *     the request's fiber ends, so a connection held open for minutes costs no parked fiber;
 *   - request bodies are read by WES's readers (NodeRequest.ts, MultipartReader.ts).
 * On shutdown it stops taking connections, closes idle ones, lets in-flight requests finish for
 * `shutdownGrace`, then closes what is left.
 */
import * as Cookies from "effect/unstable/http/Cookies"
import type * as Etag from "effect/unstable/http/Etag"
import * as HttpApp from "effect/unstable/http/HttpEffect"
import type * as HttpMiddleware from "effect/unstable/http/HttpMiddleware"
import type * as HttpPlatform from "effect/unstable/http/HttpPlatform"
import * as HttpServer from "effect/unstable/http/HttpServer"
import * as HttpServerError from "effect/unstable/http/HttpServerError"
import * as HttpServerRequest from "effect/unstable/http/HttpServerRequest"
import type * as HttpServerResponse from "effect/unstable/http/HttpServerResponse"
import type * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import * as Stream from "effect/Stream"
import type { IncomingMessage, OutgoingHttpHeaders, Server, ServerResponse } from "node:http"
import { pipeline, Readable } from "node:stream"
import type { RequestLog } from "./Logging.js"
import { MultipartReader } from "./MultipartReader.js"
import { NodeRequest } from "./NodeRequest.js"

export const NodeBodyTypeId: unique symbol = Symbol.for("@wes/http-node/NodeBody")

/** A response body that writes itself to the node response (whose head is written), for as long as it needs. */
export interface NodeBody {
  readonly [NodeBodyTypeId]: typeof NodeBodyTypeId
  readonly writeTo: (res: ServerResponse) => void
}

const isNodeBody = (u: unknown): u is NodeBody => typeof u === "object" && u !== null && NodeBodyTypeId in u

export interface NodeServerOptions {
  readonly port: number
  readonly host: string
  /** How long in-flight requests may take once shutdown begins. */
  readonly shutdownGrace: Duration.DurationInput
  /** Called as each request arrives; what it returns is told of the answer (Logging.ts). */
  readonly requestLog?: Effect.Effect<RequestLog> | undefined
}

/** Writes `response`; for a streamed body, until the stream ends (or the client leaves). */
const write = (request: NodeRequest, response: HttpServerResponse.HttpServerResponse): Effect.Effect<void, unknown> => {
  const res = request.response
  if (res.writableEnded || res.destroyed) return Effect.void
  let headers: OutgoingHttpHeaders = response.headers
  if (!Cookies.isEmpty(response.cookies)) headers = { ...headers, "set-cookie": Cookies.toSetCookieHeaders(response.cookies) }
  res.writeHead(response.status, headers)
  request.record?.answered(response.status)
  const body = response.body
  if (request.method === "HEAD") return Effect.sync(() => void res.end())
  switch (body._tag) {
    case "Empty":
      return Effect.sync(() => void res.end())
    case "Uint8Array":
      return Effect.sync(() => void res.end(body.body))
    case "Raw": {
      const raw = body.body
      if (isNodeBody(raw)) return Effect.sync(() => raw.writeTo(res))
      if (raw instanceof Readable) {
        return Effect.callback<void, unknown>((resume) => {
          pipeline(raw, res, (error) => resume(error === undefined || error === null ? Effect.void : Effect.fail(error)))
          return Effect.sync(() => raw.destroy())
        })
      }
      return Effect.sync(() => void res.end(raw as string | Uint8Array))
    }
    case "Stream": {
      const drained = Effect.callback<void>((resume) => {
        const go = () => {
          res.off("drain", go).off("close", go)
          resume(Effect.void)
        }
        res.on("drain", go).on("close", go)
        return Effect.sync(() => void res.off("drain", go).off("close", go))
      })
      return body.stream.pipe(
        Stream.runForEachChunk((chunk) => {
          let full = false
          for (const bytes of Chunk.toReadonlyArray(chunk)) full = !res.write(bytes)
          return full ? drained : Effect.void
        }),
        Effect.matchCauseEffect({
          onSuccess: () => Effect.sync(() => void res.end()),
          // The head is out: all the client can be told is that the body stopped short.
          onFailure: (cause) => Effect.andThen(Effect.sync(() => res.destroy()), Effect.failCause(cause))
        })
      )
    }
    case "FormData":
      return Effect.sync(() => res.destroy()).pipe(Effect.andThen(Effect.dieMessage("FormData response bodies are not supported")))
  }
}

/** Answers with `response`, through any pre-response handlers the app installed. */
const answer = (response: HttpServerResponse.HttpServerResponse) =>
  Effect.withFiberRuntime<void, unknown>((fiber) => {
    const handler = fiber.getFiberRef(HttpApp.currentPreResponseHandlers)
    // The server provides every request as a NodeRequest.
    const request = Context.unsafeGet(fiber.currentContext, HttpServerRequest.HttpServerRequest) as NodeRequest
    return handler._tag === "None" ? write(request, response) : Effect.flatMap(handler.value(request, response), (r) => write(request, r))
  })

/** The app as one request's program: run it, answer, and answer what it could not as the platform does. */
const handled = (app: HttpApp.Default<unknown>, middleware: HttpMiddleware.HttpMiddleware | undefined) => {
  const served = middleware === undefined ? app : middleware(app)
  return served.pipe(
    Effect.flatMap(answer),
    Effect.catchCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.void
        : Effect.flatMap(HttpServerError.causeResponse(cause), ([response, rest]) =>
          Effect.andThen(answer(response), Cause.isEmptyType(rest) ? Effect.void : Effect.logError("request failed", rest)))),
    Effect.catchCause((cause) => (Cause.isInterruptedOnly(cause) ? Effect.void : Effect.logError("could not answer a request", cause)))
  )
}

const make = (server: Server, options: NodeServerOptions) =>
  Effect.gen(function*() {
    const multipart = yield* MultipartReader
    // Made before the listener, so closed after it: requests still running then are interrupted.
    const requests = yield* FiberSet.make<void>()
    yield* Effect.acquireRelease(
      Effect.callback<void, HttpServerError.ServeError>((resume) => {
        const onError = (cause: unknown) => resume(Effect.fail(new HttpServerError.ServeError({ cause })))
        server.once("error", onError)
        server.listen(options.port, options.host, () => {
          server.off("error", onError)
          resume(Effect.void)
        })
      }),
      () =>
        Effect.callback<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeIdleConnections()
          // A backstop that must not keep the process alive by itself.
          setTimeout(() => server.closeAllConnections(), Duration.toMillis(options.shutdownGrace)).unref()
        })
    )
    const bound = server.address()
    const address: HttpServer.Address = typeof bound === "string" || bound === null
      ? { _tag: "UnixAddress", path: String(bound) }
      : { _tag: "TcpAddress", hostname: bound.address === "::" ? "0.0.0.0" : bound.address, port: bound.port }
    const readers = { multipart }

    return HttpServer.make({
      address,
      serve: (app, middleware) =>
        Effect.gen(function*() {
          const runtime = yield* Effect.runtime<never>()
          // What the app needs besides the request was provided when it was built (HttpServer.serve).
          const program = handled(app, middleware) as Effect.Effect<void, never, HttpServerRequest.HttpServerRequest>
          const begin = options.requestLog === undefined ? undefined : yield* options.requestLog
          const onRequest = (req: IncomingMessage, res: ServerResponse) => {
            const request = new NodeRequest(req, res, readers, undefined, undefined, undefined, begin?.(req, res))
            // The request is in the fiber's context from its start: `Effect.provideService` would
            // cost a context swap and its restore (about 20 steps of the runtime) per request.
            const fiber = Runtime.runFork(Runtime.make({
              context: Context.add(runtime.context, HttpServerRequest.HttpServerRequest, request),
              runtimeFlags: runtime.runtimeFlags,
              fiberRefs: runtime.fiberRefs
            }))(program)
            FiberSet.unsafeAdd(requests, fiber)
            // A client that leaves first interrupts its request. Once the request is done the
            // listener goes: a connection that stays open (an event stream) keeps no fiber alive.
            const onClose = () => {
              if (!res.writableEnded) fiber.unsafeInterruptAsFork(HttpServerError.clientAbortFiberId)
            }
            res.once("close", onClose)
            fiber.addObserver(() => res.off("close", onClose))
          }
          server.on("request", onRequest)
          yield* Effect.addFinalizer(() => Effect.sync(() => void server.off("request", onRequest)))
        })
    })
  })

/** The HTTP server on `server` (made by `evaluate`), with the platform services HttpApi routes use. */
export const layer = (
  evaluate: () => Server,
  options: NodeServerOptions
): Layer.Layer<HttpServer.HttpServer | HttpPlatform.HttpPlatform | Etag.Generator | NodeContext.NodeContext, HttpServerError.ServeError, MultipartReader> =>
  Layer.merge(Layer.effect(HttpServer.HttpServer, Effect.suspend(() => make(evaluate(), options))), NodeHttpServer.layerContext)
