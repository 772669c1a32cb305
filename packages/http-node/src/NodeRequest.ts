/**
 * A request as the HttpApi handlers see it (`HttpServerRequest` over node's `IncomingMessage`),
 * with WES's body readers: JSON bounded to 1 MB, forms through the `MultipartReader`. A body is
 * read the way its route declares it (`payloadKind`): HttpApiBuilder picks a reader by the
 * request's Content-Type, so a body in any other encoding is refused here with a 400 naming the
 * Content-Type, before a byte of it is read, rather than decoded as something else.
 */
import * as Cookies from "@effect/platform/Cookies"
import type * as Headers from "@effect/platform/Headers"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as UrlParams from "@effect/platform/UrlParams"
import { depthMessage, JSON_MAX_DEPTH, textNestsDeeperThan, ValidationError } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Inspectable from "effect/Inspectable"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { IncomingMessage, ServerResponse } from "node:http"
import type { InternalError } from "./ApiErrors.js"
import type { RequestRecord } from "./Logging.js"
import type { MultipartReader } from "./MultipartReader.js"

/** How a route's body is encoded, by its declaration. */
export type PayloadKind = "json" | "multipart"

export interface BodyReaders {
  readonly multipart: MultipartReader["Type"]
  /** The declared encoding of a route's body (`method`, path pattern as routed), if it has one. */
  readonly payloadKind: (method: string, path: string) => PayloadKind | undefined
}

/** Bodies other than forms: at most 1 MB. */
export const MAX_BODY_BYTES = 1024 * 1024

const invalid = (message: string, field: string, detail: string) => new ValidationError({ message, details: [{ field, message: detail }] })

const CONTENT_TYPE: Record<PayloadKind, string> = { json: "application/json", multipart: "multipart/form-data" }

/** The whole body, refused past `max` bytes (by its declared length, or as it streams). */
const readBytes = (source: IncomingMessage, max: number): Effect.Effect<Buffer, ValidationError> => {
  const tooLarge = invalid(`body: must be at most ${max / (1024 * 1024)} MB`, "body", `must be at most ${max / (1024 * 1024)} MB`)
  if (Number(source.headers["content-length"] ?? "0") > max) {
    source.resume()
    return Effect.fail(tooLarge)
  }
  return Effect.async<Buffer, ValidationError>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const done = (outcome: Effect.Effect<Buffer, ValidationError>) => {
      source.off("data", onData).off("end", onEnd).off("error", onError).off("aborted", onError)
      resume(outcome)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > max) {
        // The rest is read and dropped, so the client sees the answer.
        done(Effect.fail(tooLarge))
        source.resume()
      } else chunks.push(chunk)
    }
    const onEnd = () => done(Effect.succeed(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)))
    const onError = () => done(Effect.fail(invalid("body: could not be read", "body", "could not be read")))
    source.on("data", onData).on("end", onEnd).on("error", onError).on("aborted", onError)
    if (source.readableEnded) onEnd()
    return Effect.sync(() => void source.off("data", onData).off("end", onEnd).off("error", onError).off("aborted", onError))
  })
}

const parseJson = (bytes: Buffer): Effect.Effect<unknown, ValidationError> => {
  const text = bytes.toString("utf8")
  if (text.trim() === "") return Effect.fail(invalid("body: is required (a JSON object)", "body", "is required"))
  if (textNestsDeeperThan(text, JSON_MAX_DEPTH)) return Effect.fail(invalid(`body: ${depthMessage()}`, "body", depthMessage()))
  try {
    return Effect.succeed(JSON.parse(text) as unknown)
  } catch {
    return Effect.fail(invalid("body: is not valid JSON", "body", "is not valid JSON"))
  }
}

export class NodeRequest extends Inspectable.Class implements HttpServerRequest.HttpServerRequest {
  readonly [HttpServerRequest.TypeId]: HttpServerRequest.TypeId = HttpServerRequest.TypeId
  readonly [HttpIncomingMessage.TypeId]: HttpIncomingMessage.TypeId = HttpIncomingMessage.TypeId
  private cachedCookies: Record<string, string> | undefined

  constructor(
    readonly source: IncomingMessage,
    readonly response: ServerResponse,
    private readonly readers: BodyReaders,
    readonly url: string = source.url ?? "/",
    private readonly headersOverride?: Headers.Headers,
    private readonly remoteAddressOverride?: string,
    /** The request log's record of this request (none when the server keeps no log). */
    readonly record?: RequestRecord
  ) {
    super()
  }

  get originalUrl(): string {
    return this.source.url ?? "/"
  }
  get method(): HttpServerRequest.HttpServerRequest["method"] {
    return this.source.method!.toUpperCase() as HttpServerRequest.HttpServerRequest["method"]
  }
  get headers(): Headers.Headers {
    return this.headersOverride ?? (this.source.headers as Headers.Headers)
  }
  get cookies(): Record<string, string> {
    return (this.cachedCookies ??= Cookies.parseHeader(this.headers["cookie"] ?? ""))
  }
  get remoteAddress(): Option.Option<string> {
    return Option.fromNullable(this.remoteAddressOverride ?? this.source.socket.remoteAddress)
  }

  /** Runs `read` when the route declares no body or declares it as `kind`; else the 400 naming Content-Type. */
  private as<A, R>(kind: PayloadKind | undefined, read: () => Effect.Effect<A, ValidationError | InternalError, R>): Effect.Effect<A, never, R> {
    return Effect.flatMap(Effect.serviceOption(HttpRouter.RouteContext), (context) => {
      const declared = Option.isSome(context) ? this.readers.payloadKind(this.method, String(context.value.route.path)) : undefined
      if (declared !== undefined && declared !== kind) {
        this.source.resume()
        return Effect.fail(invalid(`Content-Type must be ${CONTENT_TYPE[declared]}`, "Content-Type", `must be ${CONTENT_TYPE[declared]}`))
      }
      return read()
      // HttpApiBuilder reads bodies under `orDie`: the server's error middleware turns these
      // declared errors back into their answers.
    }).pipe(Effect.orDie)
  }

  get json(): Effect.Effect<unknown, HttpServerError.RequestError> {
    return this.as("json", () => Effect.flatMap(readBytes(this.source, MAX_BODY_BYTES), parseJson))
  }
  get text(): Effect.Effect<string, HttpServerError.RequestError> {
    return this.as(undefined, () => Effect.map(readBytes(this.source, MAX_BODY_BYTES), (b) => b.toString("utf8")))
  }
  get urlParamsBody(): Effect.Effect<UrlParams.UrlParams, HttpServerError.RequestError> {
    return Effect.map(this.text, (text) => UrlParams.fromInput(new URLSearchParams(text)))
  }
  get arrayBuffer(): Effect.Effect<ArrayBuffer, HttpServerError.RequestError> {
    return this.as(undefined, () =>
      Effect.map(readBytes(this.source, MAX_BODY_BYTES), (b) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer))
  }
  get stream(): Stream.Stream<Uint8Array, HttpServerError.RequestError> {
    return Stream.unwrap(Effect.map(this.arrayBuffer, (b) => Stream.make(new Uint8Array(b))))
  }
  /** The form as Forms.ts describes it (text fields and `FormFile`s), which the declared form schemas decode. */
  get multipart(): HttpServerRequest.HttpServerRequest["multipart"] {
    return this.as("multipart", () => this.readers.multipart.read(this.source)) as unknown as HttpServerRequest.HttpServerRequest["multipart"]
  }
  get multipartStream(): HttpServerRequest.HttpServerRequest["multipartStream"] {
    return Stream.die("multipart bodies are read whole, through MultipartReader")
  }
  get upgrade(): HttpServerRequest.HttpServerRequest["upgrade"] {
    return Effect.fail(new HttpServerError.RequestError({ request: this, reason: "Decode", description: "not an upgradeable request" }))
  }
  modify(options: { readonly url?: string; readonly headers?: Headers.Headers; readonly remoteAddress?: string }): NodeRequest {
    return new NodeRequest(
      this.source,
      this.response,
      this.readers,
      options.url ?? this.url,
      options.headers ?? this.headersOverride,
      options.remoteAddress ?? this.remoteAddressOverride,
      this.record
    )
  }
  toJSON(): unknown {
    return { _id: "@effect/platform/HttpServerRequest", method: this.method, url: this.originalUrl }
  }
}
