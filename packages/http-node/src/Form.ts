/**
 * Reading multipart/form-data requests: fields in memory (bounded); file parts in memory while
 * the request's parts together stay within 1 MiB, beyond that streamed to temporary files that are
 * deleted when the request ends. The 50 MB limit counts every byte of the body while it streams,
 * so an oversized upload is refused without ever being held whole.
 */
import * as FileSystem from "@effect/platform/FileSystem"
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Path from "@effect/platform/Path"
import { StorageError } from "@wes/core"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as MP from "multipasta"
import * as NodeFs from "node:fs"
import * as os from "node:os"
import type { IncomingMessage } from "node:http"
import { badRequest, type BadRequestError, InternalError } from "./ApiErrors.js"

/** The contract's upload limit: 50 MB per request, all parts together. */
export const MAX_REQUEST_BYTES = 50 * 1024 * 1024
const MAX_FIELD_BYTES = 1024 * 1024
const MAX_PARTS = 1000
/** File bytes a request may hold in memory before its parts go to disk (small uploads skip the disk). */
const MEMORY_BUDGET = 1024 * 1024

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

/** A file part of a form: in memory, or on disk for the rest of the request. */
export interface FormFile {
  readonly key: string
  readonly name: string
  readonly contentType: string
  readonly content: { readonly _tag: "Memory"; readonly chunks: ReadonlyArray<Uint8Array> } | { readonly _tag: "Disk"; readonly path: string }
  /** Bytes received; final once the form is read. */
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

const classify = (e: MP.MultipartError, limits: FormLimits): BadRequestError => {
  switch (e._tag) {
    case "ReachedLimit":
      switch (e.limit) {
        case "MaxTotalSize":
        case "MaxPartSize":
          return tooLarge(limits)
        case "MaxFieldSize":
          return badRequest(`A text field exceeds ${megabytes(MAX_FIELD_BYTES)}; send large values as files`)
        case "MaxParts":
          return badRequest(`A form may have at most ${MAX_PARTS} parts`)
      }
    // eslint-disable-next-line no-fallthrough
    case "EndNotReached":
      return badRequest("The multipart body ended without a complete part and closing boundary")
    default:
      return badRequest("The multipart body is malformed")
  }
}

/** Reads a multipart form; spilled files land in a temporary directory owned by the current scope. */
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
    // Made only when a part goes to disk; removed with everything in it when the request ends.
    const spill: Spill = { dir: undefined, make: () => NodeFs.mkdtempSync(path.join(os.tmpdir(), "wes-upload-")) }
    yield* Effect.addFinalizer(() => spill.dir === undefined ? Effect.void : Effect.ignore(fs.remove(spill.dir, { recursive: true })))
    const incoming = NodeHttpServerRequest.toIncomingMessage(request)
    const parsed = yield* parse(incoming, spill, path.join, limits)
    if (parsed._tag === "Left") return yield* storeFailed(parsed.left)
    return parsed.right
  })

interface Spill {
  dir: string | undefined
  readonly make: () => string
}

type Outcome = Either.Either<Form, unknown>

/**
 * The body through multipasta's parser, on Node streams: one callback per chunk, no fiber per
 * chunk (the Effect stream pipeline cost about 10 ms of CPU per 256 KB upload). Backpressure:
 * the request is paused while a file part's write stream is full. Fails with the 400s of the
 * contract; a file that cannot be written is a Left (logged and answered 500 by the caller).
 */
const parse = (
  incoming: IncomingMessage,
  spill: Spill,
  join: (a: string, b: string) => string,
  limits: FormLimits
): Effect.Effect<Outcome, BadRequestError> =>
  Effect.async<Outcome, BadRequestError>((resume) => {
    const fields: Array<FormField> = []
    const files: Array<FormFile> = []
    const writers = new Set<NodeFs.WriteStream>()
    let inMemory = 0
    let ended = false
    let finished = false
    let parsedAll = false

    const finish = (outcome: Effect.Effect<Outcome, BadRequestError>) => {
      if (finished) return
      finished = true
      detach()
      resume(outcome)
    }
    const fail = (error: BadRequestError) => {
      for (const w of writers) w.destroy()
      finish(Effect.fail(error))
    }
    const failToStore = (error: unknown) => {
      for (const w of writers) w.destroy()
      finish(Effect.succeed(Either.left(error)))
    }
    const maybeDone = () => {
      // Done once the closing boundary is parsed and every spilled part is on disk.
      if (parsedAll && writers.size === 0) finish(Effect.succeed(Either.right({ fields, files })))
    }

    /**
     * Pauses the request until `writer` has written what it holds. A part that ends within the
     * same chunk of the body ends its writer, which then finishes without a `drain`: either resumes.
     */
    const holdUntilWritten = (writer: NodeFs.WriteStream) => {
      incoming.pause()
      const go = () => {
        writer.off("drain", go)
        writer.off("finish", go)
        writer.off("close", go)
        if (!finished) incoming.resume()
      }
      writer.on("drain", go)
      writer.on("finish", go)
      writer.on("close", go)
    }

    /** Moves a part to a file: what it holds so far, then every chunk after. */
    const toDisk = (file: { content: FormFile["content"] }, index: number): NodeFs.WriteStream | undefined => {
      let target: string
      try {
        spill.dir ??= spill.make()
        target = join(spill.dir, `part-${index}`)
      } catch (error) {
        failToStore(error)
        return undefined
      }
      const held = file.content._tag === "Memory" ? file.content.chunks : []
      file.content = { _tag: "Disk", path: target }
      const writer = NodeFs.createWriteStream(target, { highWaterMark: 256 * 1024 })
      writers.add(writer)
      writer.once("error", failToStore)
      writer.once("finish", () => {
        writers.delete(writer)
        maybeDone()
      })
      for (const chunk of held) writer.write(chunk)
      return writer
    }

    const parser = MP.make({
      headers: incoming.headers as Record<string, string>,
      maxTotalSize: limits.maxBytes,
      maxFieldSize: MAX_FIELD_BYTES,
      maxParts: MAX_PARTS,
      onField: (info, value) => fields.push({ key: info.name, value: MP.decodeField(info, value) }),
      onFile: (info) => {
        const index = files.length
        const chunks: Array<Uint8Array> = []
        const file: { -readonly [K in keyof FormFile]: FormFile[K] } = {
          key: info.name,
          name: info.filename ?? info.name,
          contentType: info.contentType,
          content: { _tag: "Memory", chunks },
          size: 0
        }
        // In the order sent; the form is complete once every spilled part is on disk.
        files.push(file)
        let writer: NodeFs.WriteStream | undefined
        return (chunk) => {
          if (finished) return
          if (chunk === null) {
            writer?.end()
            return
          }
          file.size += chunk.length
          if (writer === undefined && inMemory + chunk.length <= MEMORY_BUDGET) {
            inMemory += chunk.length
            // The parser's chunk may be a view of the socket's buffer: keep a copy.
            chunks.push(Uint8Array.prototype.slice.call(chunk))
            return
          }
          writer ??= toDisk(file, index)
          if (writer === undefined) return
          if (!writer.write(chunk) && !incoming.isPaused()) holdUntilWritten(writer)
        }
      },
      onError: (error) => fail(classify(error, limits)),
      onDone: () => {
        parsedAll = true
        maybeDone()
      }
    })

    const onData = (chunk: Buffer) => {
      if (!finished) parser.write(chunk)
    }
    const onEnd = () => {
      ended = true
      if (finished) return
      parser.end()
      // A body that ends before its closing boundary (or before any part) is malformed.
      if (!parsedAll) fail(badRequest("The multipart body ended without a complete part and closing boundary"))
    }
    const onAborted = () => fail(badRequest("The request body was not received completely"))
    const onError = () => fail(badRequest("The request body could not be read"))
    const detach = () => {
      incoming.off("data", onData)
      incoming.off("end", onEnd)
      incoming.off("aborted", onAborted)
      incoming.off("error", onError)
      // What the client still sends (an epilogue, or the rest of a refused body) is read and
      // dropped, as node does for a body nobody reads: a paused request would stall the
      // connection, and a client still writing would never read the answer.
      if (!ended) incoming.resume()
    }
    incoming.on("data", onData)
    incoming.on("end", onEnd)
    incoming.on("aborted", onAborted)
    incoming.on("error", onError)
    if (incoming.readableEnded) onEnd()
    return Effect.sync(() => {
      finished = true
      detach()
      for (const w of writers) w.destroy()
    })
  })

/** A file part's bytes as a stream for the blob store. */
export const fileContent = (file: FormFile): Stream.Stream<Uint8Array, StorageError, FileSystem.FileSystem> => {
  const content = file.content
  return content._tag === "Memory"
    ? Stream.fromIterable(content.chunks)
    : Stream.unwrap(Effect.map(FileSystem.FileSystem, (fs) =>
      fs.stream(content.path, { chunkSize: FileSystem.MiB(1) }).pipe(
        Stream.mapError((e) => new StorageError({ message: `could not read an upload: ${e.message}` }))
      )))
}

/** A file part's text (for JSON documents sent as files). */
export const fileText = (file: FormFile): Effect.Effect<string, InternalError, FileSystem.FileSystem> => {
  const content = file.content
  if (content._tag === "Memory") {
    const decoder = new TextDecoder()
    return Effect.succeed(content.chunks.map((c, i) => decoder.decode(c, { stream: i < content.chunks.length - 1 })).join(""))
  }
  return Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFileString(content.path)).pipe(
    Effect.mapError(() => new InternalError({ status: 500, message: "The upload could not be read" }))
  )
}
