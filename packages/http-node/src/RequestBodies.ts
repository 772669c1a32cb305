/**
 * Request bodies, read the way the endpoint declares them: JSON (at most 1 MB, nesting bounded) or
 * a form through the `MultipartReader` (streamed, bounded, spilled to disk past its memory
 * budget), then decoded strictly by the declared payload schema into the contract's 400. A body
 * sent in another encoding than the endpoint declares is refused with a 400 naming the
 * Content-Type before a byte of it is read.
 *
 * HttpApiBuilder reads and decodes a body before the endpoint's middleware has run, with its own
 * readers and refusals (415, the platform's multipart parser); WES's body endpoints are handled
 * raw (`handleRaw`) and read here, after authentication, through `withPayload`.
 */
import { depthMessage, fromSchemaError, JSON_MAX_DEPTH, textNestsDeeperThan, ValidationError } from "@wes/core"
import * as ByteSize from "effect/ByteSize"
import * as Effect from "effect/Effect"
import * as HttpIncomingMessage from "effect/http/HttpIncomingMessage"
import type * as HttpServerError from "effect/http/HttpServerError"
import type { HttpServerRequest } from "effect/http/HttpServerRequest"
import type * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { MultipartReader } from "./MultipartReader.js"
import { type NodeMessages, nodeMessages } from "./NodeMessages.js"

/** Bodies other than forms: at most 1 MB. */
export const MAX_BODY_BYTES = 1024 * 1024

/** Request bodies are decoded strictly: every problem is reported, and an undeclared field is a 400 naming it. */
const STRICT = { errors: "all", onExcessProperty: "error" } as const

/** How an endpoint's body is encoded, by its declaration. */
type PayloadKind = "json" | "multipart"

const CONTENT_TYPE: Record<PayloadKind, string> = { json: "application/json", multipart: "multipart/form-data" }

/** What of an endpoint the reader needs: its declared payloads. */
export interface PayloadEndpoint {
  readonly path: string
  readonly payload: HttpApiEndpoint.PayloadMap
}

const invalid = (field: string, detail: string, message = `${field}: ${detail}`) =>
  new ValidationError({ message, details: [{ field, message: detail }] })

const tooLarge = invalid("body", `must be at most ${MAX_BODY_BYTES / (1024 * 1024)} MB`)

/** The encoding the client says it sent (no Content-Type: JSON, as HttpApi reads it). */
const sentKind = (contentType: string | undefined): PayloadKind | "other" => {
  const type = contentType === undefined ? "application/json" : contentType.toLowerCase()
  return type.includes("application/json") ? "json" : type.includes("multipart/form-data") ? "multipart" : "other"
}

/** A JSON body: required, nested at most `JSON_MAX_DEPTH` deep, valid. */
export const parseJson = (text: string): Effect.Effect<unknown, ValidationError> => {
  if (text.trim() === "") return Effect.fail(invalid("body", "is required", "body: is required (a JSON object)"))
  if (textNestsDeeperThan(text, JSON_MAX_DEPTH)) return Effect.fail(invalid("body", depthMessage()))
  try {
    return Effect.succeed(JSON.parse(text) as unknown)
  } catch {
    return Effect.fail(invalid("body", "is not valid JSON"))
  }
}

/** The body as text, refused past 1 MB (by its declared length, or as it streams). */
const readText = (request: HttpServerRequest): Effect.Effect<string, ValidationError> => {
  if (Number(request.headers["content-length"] ?? "0") > MAX_BODY_BYTES) return Effect.fail(tooLarge)
  return request.text.pipe(
    Effect.provideService(HttpIncomingMessage.MaxBodySize, ByteSize.bytes(MAX_BODY_BYTES)),
    Effect.mapError((error: HttpServerError.HttpServerError) =>
      error.reason._tag === "RequestParseError" && error.reason.reason === "BodyTooLarge" ? tooLarge : invalid("body", "could not be read"))
  )
}

/** How one endpoint's body is read and decoded; made once per endpoint. */
interface Decoder {
  readonly kind: PayloadKind
  readonly decode: (input: unknown) => Effect.Effect<unknown, Schema.SchemaError>
}

const decoderOf = (endpoint: PayloadEndpoint): Decoder => {
  const form = endpoint.payload.get(CONTENT_TYPE.multipart)
  const json = endpoint.payload.get(CONTENT_TYPE.json)
  const declared = form ?? json
  if (declared === undefined || endpoint.payload.size !== 1) {
    throw new Error(`${endpoint.path}: WES reads JSON or multipart bodies, one encoding per endpoint`)
  }
  if (declared.encoding._tag === "Stream" || (declared.encoding._tag === "Multipart" && declared.encoding.mode === "stream")) {
    throw new Error(`${endpoint.path}: streamed bodies are not supported`)
  }
  const [first, ...rest] = declared.schemas
  const schema: Schema.Top = rest.length === 0 ? first : Schema.Union([first, ...rest])
  const decode = Schema.decodeUnknownEffect(schema as Schema.Codec<unknown, unknown>, STRICT)
  return { kind: form === undefined ? "json" : "multipart", decode }
}

/** `Expect: 100-continue`: tell the client to send the body that is about to be read. */
const acceptBody = ({ req, res }: NodeMessages) => {
  if (req.headers.expect?.toLowerCase() === "100-continue" && !res.headersSent) res.writeContinue()
}

/** Reads and decodes the body of a request to `endpoint`: its value as the declared payload schema decodes it. */
export type ReadPayload = (request: HttpServerRequest, endpoint: PayloadEndpoint) => Effect.Effect<unknown, ValidationError, Scope.Scope>

/** The body reader over the server's `MultipartReader` (taken once, when the handlers are built). */
export const payloadReader: Effect.Effect<ReadPayload, never, MultipartReader> = Effect.map(MultipartReader, (multipart) => {
  const decoders = new WeakMap<PayloadEndpoint, Decoder>()
  const decoderFor = (endpoint: PayloadEndpoint) => {
    let found = decoders.get(endpoint)
    if (found === undefined) {
      found = decoderOf(endpoint)
      decoders.set(endpoint, found)
    }
    return found
  }
  const decoded = (decoder: Decoder) => (input: unknown) => Effect.mapError(decoder.decode(input), fromSchemaError)
  return (request, endpoint) => {
    const decoder = decoderFor(endpoint)
    const kind = decoder.kind
    if (sentKind(request.headers["content-type"]) !== kind) {
      return Effect.fail(invalid("Content-Type", `must be ${CONTENT_TYPE[kind]}`, `Content-Type must be ${CONTENT_TYPE[kind]}`))
    }
    if (kind === "json") return Effect.flatMap(Effect.flatMap(readText(request), parseJson), decoded(decoder))
    const node = nodeMessages(request)
    acceptBody(node)
    return Effect.flatMap(
      // A part that cannot be stored is the server's fault: logged by the reader, answered 500.
      Effect.catch(multipart.read(node.req), (e) => (e instanceof ValidationError ? Effect.fail(e) : Effect.die(e))),
      decoded(decoder)
    )
  }
})

/** What `withPayload` needs of a raw handler's request. */
export interface RawRequest {
  readonly request: HttpServerRequest
  readonly endpoint: PayloadEndpoint & { readonly "~Payload": Schema.Top }
}

/** The payload type an endpoint declares. */
export type PayloadOf<Endpoint> = Endpoint extends { readonly "~Payload": infer P extends Schema.Top } ? P["Type"] : never

/**
 * A handler of a body endpoint, written as for `handlers.handle` (its request has the decoded
 * `payload`), for `handlers.handleRaw`: the body is read by `read` once the middlewares have run.
 */
export const withPayload = (read: ReadPayload) =>
<Raw extends RawRequest, A, E, R>(
  handler: (request: Raw & { readonly payload: PayloadOf<Raw["endpoint"]> }) => Effect.Effect<A, E, R>
) =>
(request: Raw): Effect.Effect<A, E | ValidationError, R | Scope.Scope> =>
  Effect.flatMap(
    read(request.request, request.endpoint),
    // The endpoint's own payload schema decoded it: the value is of its type.
    (payload) => handler({ ...request, payload: payload as PayloadOf<Raw["endpoint"]> })
  )
