/**
 * A request as the handlers see it (`HttpServerRequest` over node's `IncomingMessage`), with the
 * request log's record of it. The server reads a route's body as the route declares it
 * (edge/Bodies.ts) before the handler runs; the body getters here read it with the same bounds.
 */
import * as Cookies from "effect/unstable/http/Cookies"
import type * as Headers from "effect/unstable/http/Headers"
import * as HttpIncomingMessage from "effect/unstable/http/HttpIncomingMessage"
import * as HttpServerError from "effect/unstable/http/HttpServerError"
import * as HttpServerRequest from "effect/unstable/http/HttpServerRequest"
import * as UrlParams from "effect/unstable/http/UrlParams"
import * as Effect from "effect/Effect"
import * as Inspectable from "effect/Inspectable"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { IncomingMessage, ServerResponse } from "node:http"
import { MAX_BODY_BYTES, parseJson, readBytes } from "./edge/Bodies.js"
import type { RequestRecord } from "./Logging.js"
import type { MultipartReader } from "./MultipartReader.js"

export interface BodyReaders {
  readonly multipart: MultipartReader["Type"]
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

  // The server reads a route's body itself, as declared (edge/Bodies.ts); these serve a handler
  // that reads the request (`handleRaw`), with the same bounds. Their refusals are defects that the
  // server answers as the 400 (or 500) they carry.
  get json(): Effect.Effect<unknown, HttpServerError.RequestError> {
    return Effect.orDie(Effect.flatMap(readBytes(this.source, MAX_BODY_BYTES), parseJson))
  }
  get text(): Effect.Effect<string, HttpServerError.RequestError> {
    return Effect.orDie(Effect.map(readBytes(this.source, MAX_BODY_BYTES), (b) => b.toString("utf8")))
  }
  get urlParamsBody(): Effect.Effect<UrlParams.UrlParams, HttpServerError.RequestError> {
    return Effect.map(this.text, (text) => UrlParams.fromInput(new URLSearchParams(text)))
  }
  get arrayBuffer(): Effect.Effect<ArrayBuffer, HttpServerError.RequestError> {
    return Effect.orDie(
      Effect.map(readBytes(this.source, MAX_BODY_BYTES), (b) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer)
    )
  }
  get stream(): Stream.Stream<Uint8Array, HttpServerError.RequestError> {
    return Stream.unwrap(Effect.map(this.arrayBuffer, (b) => Stream.make(new Uint8Array(b))))
  }
  /** The form as Forms.ts describes it (text fields and `FormFile`s), which the declared form schemas decode. */
  get multipart(): HttpServerRequest.HttpServerRequest["multipart"] {
    return Effect.orDie(this.readers.multipart.read(this.source)) as unknown as HttpServerRequest.HttpServerRequest["multipart"]
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
    return { _id: "effect/unstable/http/HttpServerRequest", method: this.method, url: this.originalUrl }
  }
}
