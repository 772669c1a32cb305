/**
 * One endpoint of the declaration, compiled into what the router runs for it: its middleware
 * (authentication) around the path, body, headers and query decoded by the declared schemas (in
 * HttpApiBuilder's order), the handler, and the answer encoded by the declared success schema.
 * Decoders and encoders are made once, here; those that can answer synchronously do (an `Either`
 * is an Effect), so a request pays no fiber step for a decode that cannot wait.
 */
import type * as HttpApiEndpoint from "effect/unstable/httpapi/HttpApiEndpoint"
import * as HttpApiMiddleware from "effect/unstable/httpapi/HttpApiMiddleware"
import * as HttpApiSchema from "effect/unstable/httpapi/HttpApiSchema"
import type * as HttpApiSecurity from "effect/unstable/httpapi/HttpApiSecurity"
import * as HttpServerRequest from "effect/unstable/http/HttpServerRequest"
import * as HttpServerResponse from "effect/unstable/http/HttpServerResponse"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type { NodeRequest } from "../NodeRequest.js"
import type { Handler } from "./ApiGroups.js"
import type { BodyReader, PayloadKind } from "./Bodies.js"
import { jsonResponse } from "./Failures.js"
import { normalizeQuery } from "./Query.js"

export type Params = Readonly<Record<string, string | undefined>>
export type Search = Readonly<Record<string, string | ReadonlyArray<string>>>

/** What the router runs for a matched request; failures are answered by Failures.ts. */
export type Run = (request: NodeRequest, params: Params, search: Search) => Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, unknown>

/** The context is the server's (ApiApp.ts): the request, its scope, the groups' services. */
type Program = Effect.Effect<unknown, unknown, unknown>

/** A middleware tag of the declaration with its implementation. */
export interface Middleware {
  readonly tag: HttpApiMiddleware.TagClassAny
  readonly implementation: unknown
}

/** `HttpApiSecurity.bearer`'s credential: the Authorization header after `Bearer `. */
const credential = (security: HttpApiSecurity.HttpApiSecurity): Effect.Effect<Redacted.Redacted, never, HttpServerRequest.HttpServerRequest> => {
  if (security._tag !== "Bearer") throw new Error(`unsupported security scheme ${security._tag}: WES's server reads bearer tokens only`)
  return Effect.map(HttpServerRequest.HttpServerRequest, (request) => Redacted.make((request.headers.authorization ?? "").slice("Bearer ".length)))
}

/** A middleware's effect: a security middleware tries its schemes in order, as HttpApiBuilder does. */
const middlewareEffect = ({ implementation, tag }: Middleware): Program => {
  if (!(HttpApiMiddleware.SecurityTypeId in tag)) return implementation as Program
  const schemes = (tag as unknown as { readonly security: Record<string, HttpApiSecurity.HttpApiSecurity> }).security
  const handlers = implementation as Record<string, (credential: unknown) => Program>
  let effect: Program | undefined
  for (const [key, security] of Object.entries(schemes)) {
    const attempt = Effect.flatMap(credential(security), (c) => handlers[key]!(c)) as Program
    effect = effect === undefined ? attempt : Effect.catch(effect, () => attempt)
  }
  return effect ?? Effect.void
}

/** Wraps `program` in the middlewares, the first innermost (as HttpApiBuilder applies them). */
export const withMiddlewares = (middlewares: ReadonlyArray<Middleware>): (program: Program) => Program => {
  const steps = middlewares.map((m) => {
    const effect = middlewareEffect(m)
    const provides = (m.tag as { readonly provides?: Context.Tag<unknown, unknown> }).provides
    if (m.tag.optional) {
      return (inner: Program): Program =>
        Effect.matchEffect(effect, {
          onFailure: () => inner,
          onSuccess: (value) => (provides === undefined ? inner : Effect.provideService(inner, provides, value))
        })
    }
    return (inner: Program): Program => (provides === undefined ? Effect.andThen(effect, inner) : Effect.provideServiceEffect(inner, provides, effect))
  })
  return (program) => steps.reduce((inner, step) => step(inner), program)
}

type Decode = (input: unknown) => Result.Result<unknown, unknown>

const syncDecoder = (schema: Option.Option<Schema.Schema.Any>): Decode | undefined =>
  Option.match(schema, { onNone: () => undefined, onSome: (s) => Schema.decodeUnknownExit(s as Schema.Schema<unknown, unknown>) })

/** The answer for a handler's value, by the declared success schema(s). */
const successEncoder = (endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps) => {
  const schemas = new Set<Schema.Schema.Any>()
  HttpApiSchema.deunionize(schemas, endpoint.successSchema)
  const answers = [...schemas].map((schema) => {
    const encoding = HttpApiSchema.getEncoding(schema.ast)
    return {
      is: Schema.is(Schema.toType(schema)),
      encode: Schema.encodeUnknownExit(schema as Schema.Schema<unknown, unknown>),
      status: HttpApiSchema.getStatusSuccessAST(schema.ast),
      empty: HttpApiSchema.isVoid(schema.ast),
      encoding
    }
  })
  return (value: unknown): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
    if (HttpServerResponse.isServerResponse(value)) return Effect.succeed(value)
    const answer = answers.length === 1 ? answers[0]! : answers.find((a) => a.is(value))
    if (answer === undefined) return Effect.dieMessage(`${endpoint.name}: the handler's answer matches no declared success`)
    if (answer.empty) return Effect.succeed(HttpServerResponse.empty({ status: answer.status }))
    const encoded = answer.encode(value)
    // The handler answered what its own declaration refuses: a bug, not the client's fault.
    if (Result.isFailure(encoded)) return Effect.die(encoded.left)
    const { contentType, kind } = answer.encoding
    return Effect.succeed(
      kind === "Json"
        ? jsonResponse(encoded.right, answer.status)
        : kind === "Uint8Array"
        ? HttpServerResponse.uint8Array(encoded.right as Uint8Array, { status: answer.status, contentType })
        : HttpServerResponse.text(String(encoded.right), { status: answer.status, contentType })
    )
  }
}

/** How the endpoint's body is declared: none, JSON or a form. */
const payloadKindOf = (endpoint: HttpApiEndpoint.HttpApiEndpoint.AnyWithProps): PayloadKind | undefined =>
  Option.match(endpoint.payloadSchema, {
    onNone: () => undefined,
    onSome: (schema) => {
      if (HttpApiSchema.getMultipartStream(schema.ast) !== undefined) throw new Error(`${endpoint.name}: streamed forms are not supported`)
      if (HttpApiSchema.getMultipart(schema.ast) !== undefined) return "multipart"
      const { kind } = HttpApiSchema.getEncoding(schema.ast)
      if (kind !== "Json") throw new Error(`${endpoint.name}: ${kind} bodies are not supported`)
      return "json"
    }
  })

/** Compiles `handler` (with the middlewares of its API, group and endpoint) into what the router runs. */
export const compileEndpoint = (handler: Handler, middlewares: ReadonlyArray<Middleware>, readBody: BodyReader): Run => {
  const { endpoint } = handler
  const decodePath = syncDecoder(endpoint.pathSchema)
  const decodeHeaders = syncDecoder(endpoint.headersSchema)
  const decodeQuery = syncDecoder(endpoint.urlParamsSchema)
  const queryAst = Option.getOrUndefined(endpoint.urlParamsSchema)?.ast
  const kind = handler.withFullRequest ? undefined : payloadKindOf(endpoint)
  const decodePayload = kind === undefined ? undefined : Schema.decodeUnknownEffect(Option.getOrThrow(endpoint.payloadSchema) as Schema.Schema<unknown, unknown>)
  const encode = successEncoder(endpoint)
  const wrap = withMiddlewares(middlewares)
  const run = handler.handler as (input: Record<string, unknown>) => Program

  // After the body: headers, then the query (HttpApiBuilder's order), then the handler.
  const rest = (input: Record<string, unknown>, request: NodeRequest, search: Search): Program => {
    if (decodeHeaders !== undefined) {
      const headers = decodeHeaders(request.headers)
      if (Result.isFailure(headers)) return headers
      input["headers"] = headers.right
    }
    if (decodeQuery !== undefined) {
      const query = decodeQuery(normalizeQuery(search, queryAst!))
      if (Result.isFailure(query)) return query
      input["urlParams"] = query.right
    }
    return Effect.flatMap(run(input), encode)
  }

  const program = (request: NodeRequest, params: Params, search: Search): Program => {
    const input: Record<string, unknown> = { request }
    if (decodePath !== undefined) {
      const path = decodePath(params)
      if (Result.isFailure(path)) return path
      input["path"] = path.right
    }
    if (kind === undefined || decodePayload === undefined) return rest(input, request, search)
    return Effect.flatMap(Effect.flatMap(readBody(kind, request.source), (body) => decodePayload(body)), (payload) => {
      input["payload"] = payload
      return rest(input, request, search)
    }) as Program
  }

  return (request, params, search) => {
    const wrapped = wrap(program(request, params, search)) as Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, unknown>
    // A form's parts spilled to disk live until the handler is done with them (MultipartReader).
    const answered = kind === "multipart" ? Effect.scoped(wrapped) : wrapped
    return handler.uninterruptible ? Effect.uninterruptible(answered) : answered
  }
}

