/**
 * Reading multipart/form-data requests: fields in memory (bounded), file parts streamed to
 * temporary files that are deleted when the request ends. The 50 MB limit counts every byte of
 * the body while it streams, so an oversized upload is refused without ever being held whole.
 */
import * as FileSystem from "@effect/platform/FileSystem"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Multipart from "@effect/platform/Multipart"
import * as Path from "@effect/platform/Path"
import { StorageError } from "@wes/core"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { badRequest, type BadRequestError, InternalError } from "./ApiErrors.js"

/** The contract's upload limit: 50 MB per request, all parts together. */
export const MAX_REQUEST_BYTES = 50 * 1024 * 1024
const MAX_FIELD_BYTES = 1024 * 1024
const MAX_PARTS = 1000
/** How long the parser may take to finish once the body has fully arrived. */
const PARSE_GRACE = Duration.seconds(2)

// RFC 9110 media type parameters: `; name=token` or `; name="quoted string"`. The parser refuses
// (as a defect, so a 500) any Content-Type that is not entirely made of them, so check first.
const TOKEN = "[!#$%&'*+.^\\w`|~-]+"
const QUOTED = '"(?:[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\x20-\\x7e])*"'
const MULTIPART_CONTENT_TYPE = new RegExp(`^ *multipart/form-data *(?:; *${TOKEN}=(?:${TOKEN}|${QUOTED}) *)*$`, "i")

/** A text field of a form. */
export interface FormField {
  readonly key: string
  readonly value: string
}

/** A file part of a form, on disk for the rest of the request. */
export interface FormFile {
  readonly key: string
  readonly name: string
  readonly contentType: string
  readonly path: string
  readonly size: number
}

export interface Form {
  readonly fields: ReadonlyArray<FormField>
  readonly files: ReadonlyArray<FormFile>
}

export interface FormLimits {
  readonly maxBytes: number
}

const megabytes = (n: number) => `${Math.round(n / (1024 * 1024))} MB`

/** The 400 for a body over the limit; it names the limit. */
export const tooLarge = (limits: FormLimits): BadRequestError =>
  badRequest(`Request body exceeds the ${megabytes(limits.maxBytes)} limit per request`, [
    { field: "body", message: `must be at most ${megabytes(limits.maxBytes)} (all parts together)` }
  ])

const isLimit = (cause: unknown): boolean =>
  typeof cause === "object" && cause !== null && "_tag" in cause && cause._tag === "ReachedLimit"

const classify = (e: Multipart.MultipartError, limits: FormLimits): BadRequestError => {
  switch (e.reason) {
    case "BodyTooLarge":
    case "FileTooLarge":
      return tooLarge(limits)
    case "FieldTooLarge":
      return badRequest(`A text field exceeds ${megabytes(MAX_FIELD_BYTES)}; send large values as files`)
    case "TooManyParts":
      return badRequest(`A form may have at most ${MAX_PARTS} parts`)
    case "InternalError":
      // On Node a limit reached inside a file part surfaces here, with the parser's error as cause.
      return isLimit(e.cause) ? tooLarge(limits) : badRequest("The multipart body could not be read")
    case "Parse":
      return badRequest("The multipart body is malformed")
  }
}

/** Reads a multipart form; files land in a temporary directory owned by the current scope. */
export const readForm = (
  request: HttpServerRequest.HttpServerRequest,
  limits: FormLimits = { maxBytes: MAX_REQUEST_BYTES }
): Effect.Effect<Form, BadRequestError | InternalError, Scope.Scope | FileSystem.FileSystem | Path.Path> =>
  Effect.gen(function*() {
    const contentType = request.headers["content-type"] ?? ""
    if (!contentType.toLowerCase().startsWith("multipart/form-data")) {
      return yield* Effect.fail(badRequest("Content-Type must be multipart/form-data", [
        { field: "Content-Type", message: "must be multipart/form-data" }
      ]))
    }
    if (!MULTIPART_CONTENT_TYPE.test(contentType) || !/; *boundary=(?!""|;| |$)/i.test(contentType)) {
      return yield* Effect.fail(badRequest(
        "Content-Type multipart/form-data needs a boundary parameter (a token, or a quoted string for other characters)",
        [{ field: "Content-Type", message: "needs a valid boundary parameter" }]
      ))
    }
    const length = request.headers["content-length"]
    if (length !== undefined && Number(length) === 0) {
      return yield* Effect.fail(badRequest("The multipart body is empty", [{ field: "body", message: "is empty" }]))
    }
    if (Number(length ?? "0") > limits.maxBytes) return yield* Effect.fail(tooLarge(limits))

    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const storeFailed = (error: unknown) =>
      Effect.zipRight(
        Effect.logError("could not store an upload", { error: String(error) }),
        Effect.fail(new InternalError({ status: 500, message: "The upload could not be stored" }))
      )
    const dir = yield* fs.makeTempDirectoryScoped({ prefix: "wes-upload-" }).pipe(Effect.catchAll(storeFailed))
    const fields: Array<FormField> = []
    const files: Array<FormFile> = []

    const parts = request.multipartStream.pipe(
      Multipart.withLimitsStream({
        maxTotalSize: Option.some(limits.maxBytes),
        maxFieldSize: MAX_FIELD_BYTES,
        maxParts: Option.some(MAX_PARTS)
      }),
      Stream.mapError((e) => classify(e, limits)),
      Stream.runForEach((part) => {
        if (part._tag === "Field") {
          fields.push({ key: part.key, value: part.value })
          return Effect.void
        }
        const file = part as Multipart.File
        const target = path.join(dir, `part-${files.length}`)
        let size = 0
        return file.content.pipe(
          Stream.tap((chunk) => Effect.sync(() => (size += chunk.length))),
          Stream.mapError((e) => classify(e, limits)),
          Stream.run(fs.sink(target)),
          Effect.catchTags({ SystemError: storeFailed, BadArgument: storeFailed }),
          Effect.tap(() => Effect.sync(() => files.push({ key: file.key, name: file.name, contentType: file.contentType, path: target, size })))
        )
      })
    )
    // The parser never finishes a body that ends before its first boundary: once the body has
    // ended, give it a moment, then call the body malformed.
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    const bodyEnded = Effect.async<void>((resume) => {
      if (incoming.readableEnded) return resume(Effect.void)
      incoming.once("end", () => resume(Effect.void))
    })
    yield* Effect.raceFirst(
      parts,
      bodyEnded.pipe(
        Effect.zipRight(Effect.sleep(PARSE_GRACE)),
        Effect.zipRight(Effect.fail(badRequest("The multipart body ended without a complete part and closing boundary")))
      )
    )
    return { fields, files }
  })

/** A file part's bytes as a stream for the blob store. */
export const fileContent = (file: FormFile): Stream.Stream<Uint8Array, StorageError, FileSystem.FileSystem> =>
  Stream.unwrap(Effect.map(FileSystem.FileSystem, (fs) =>
    fs.stream(file.path).pipe(Stream.mapError((e) => new StorageError({ message: `could not read an upload: ${e.message}` })))
  ))

/** A file part's text (for JSON documents sent as files). */
export const fileText = (file: FormFile): Effect.Effect<string, InternalError, FileSystem.FileSystem> =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFileString(file.path)).pipe(
    Effect.mapError(() => new InternalError({ status: 500, message: "The upload could not be read" }))
  )
