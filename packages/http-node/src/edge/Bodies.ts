/**
 * Request bodies, read the way the route declares them: JSON (at most 1 MB, nesting bounded) or a
 * form through the `MultipartReader`. A body sent in another encoding than the route declares is
 * refused with a 400 naming the Content-Type before a byte of it is read, rather than decoded as
 * something else.
 */
import { depthMessage, JSON_MAX_DEPTH, textNestsDeeperThan, ValidationError } from "@wes/core"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { IncomingMessage } from "node:http"
import type { InternalError } from "@wes/api"
import type { MultipartReader } from "../MultipartReader.js"

/** How a route's body is encoded, by its declaration. */
export type PayloadKind = "json" | "multipart"

/** Bodies other than forms: at most 1 MB. */
export const MAX_BODY_BYTES = 1024 * 1024

const CONTENT_TYPE: Record<PayloadKind, string> = { json: "application/json", multipart: "multipart/form-data" }

const invalid = (field: string, detail: string, message = `${field}: ${detail}`) =>
  new ValidationError({ message, details: [{ field, message: detail }] })

/** The whole body, refused past `max` bytes (by its declared length, or as it streams). */
export const readBytes = (source: IncomingMessage, max: number): Effect.Effect<Buffer, ValidationError> => {
  const tooLarge = invalid("body", `must be at most ${max / (1024 * 1024)} MB`)
  if (Number(source.headers["content-length"] ?? "0") > max) {
    source.resume()
    return Effect.fail(tooLarge)
  }
  return Effect.callback<Buffer, ValidationError>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const off = () => void source.off("data", onData).off("end", onEnd).off("error", onError).off("aborted", onError)
    const done = (outcome: Effect.Effect<Buffer, ValidationError>) => {
      off()
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
    const onError = () => done(Effect.fail(invalid("body", "could not be read")))
    source.on("data", onData).on("end", onEnd).on("error", onError).on("aborted", onError)
    if (source.readableEnded) onEnd()
    return Effect.sync(off)
  })
}

/** A JSON body: required, nested at most `JSON_MAX_DEPTH` deep, valid. */
export const parseJson = (bytes: Buffer): Effect.Effect<unknown, ValidationError> => {
  const text = bytes.toString("utf8")
  if (text.trim() === "") return Effect.fail(invalid("body", "is required", "body: is required (a JSON object)"))
  if (textNestsDeeperThan(text, JSON_MAX_DEPTH)) return Effect.fail(invalid("body", depthMessage()))
  try {
    return Effect.succeed(JSON.parse(text) as unknown)
  } catch {
    return Effect.fail(invalid("body", "is not valid JSON"))
  }
}

/** The encoding the client says it sent (no Content-Type: JSON, as HttpApi reads it). */
const sentKind = (contentType: string | undefined): PayloadKind | "other" => {
  const type = contentType === undefined ? "application/json" : contentType.toLowerCase()
  return type.includes("application/json") ? "json" : type.includes("multipart/form-data") ? "multipart" : "other"
}

export type BodyReader = (kind: PayloadKind, source: IncomingMessage) => Effect.Effect<unknown, ValidationError | InternalError, Scope.Scope>

/** Reads a body declared as `kind`, or refuses one sent in another encoding (400 naming Content-Type). */
export const bodyReader = (multipart: MultipartReader["Type"]): BodyReader => (kind, source) => {
  if (sentKind(source.headers["content-type"]) !== kind) {
    source.resume()
    return Effect.fail(invalid("Content-Type", `must be ${CONTENT_TYPE[kind]}`, `Content-Type must be ${CONTENT_TYPE[kind]}`))
  }
  return kind === "json" ? Effect.flatMap(readBytes(source, MAX_BODY_BYTES), parseJson) : multipart.read(source)
}
