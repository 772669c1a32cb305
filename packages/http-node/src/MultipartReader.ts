/**
 * Reads multipart/form-data request bodies as they stream in, into the record the API's forms
 * decode from (Forms.ts). multipasta's parser is fed straight from the socket, one callback per
 * chunk (an Effect stream pipeline cost about 10 ms of CPU per 256 KB upload). File parts stay in
 * memory while a request's parts total at most `memoryBudget` (1 MiB); beyond that they stream to
 * a file in a directory made once when the server starts, the request paused while the file
 * cannot keep up, and are deleted when the request ends. Every byte counts against the caller's
 * tier's `max_upload_bytes` (the contract's 50 MB by default; `WES_TIER_LIMITS` raises it), so an
 * oversized upload is refused as it streams (at once from a larger Content-Length) without ever
 * being held whole; a request without a caller (none reads a form today) has the contract's 50 MB.
 * No synchronous filesystem call runs on a request; chunks are kept as node delivered them (each
 * is its own buffer), not copied, and a chunk a spilled part's file has whole is freed at once
 * (SpilledChunks.ts).
 */
import { CurrentUser, FormFile, type FormRecord, InternalError } from "@wes/api"
import { sizeText, StorageError, type Tier, TierPolicy, ValidationError } from "@wes/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Path from "effect/Path"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as MP from "multipasta"
import { fileBacked } from "./LocalFileContent.js"
import { makeSpilledChunks } from "./SpilledChunks.js"
import * as NodeFs from "node:fs"
import type { IncomingMessage } from "node:http"

export interface MultipartLimits {
  /** Bytes of the whole body of a request without a caller; a caller's is their tier's `max_upload_bytes`. */
  readonly maxBytes: number
  /** Bytes of one text field. */
  readonly maxFieldBytes: number
  readonly maxParts: number
  /** File bytes a request may hold in memory before its parts go to disk. */
  readonly memoryBudget: number
  /** Where the directory for spilled parts is made (default: the system's temporary directory). */
  readonly directory?: string | undefined
}

export const defaultMultipartLimits: MultipartLimits = {
  // The contract's 50 MB (CONTRACT_UPLOAD_BYTES, every tier's default max_upload_bytes).
  maxBytes: 50 * 1024 * 1024,
  maxFieldBytes: 1024 * 1024,
  maxParts: 1000,
  memoryBudget: 1024 * 1024
}

export class MultipartReader extends Context.Service<MultipartReader, {
  /**
   * The request's form. Fails with a 400 (`ValidationError`) naming what is wrong, or a 500
   * (`InternalError`) when a part cannot be written to disk; spilled parts live until the scope closes.
   */
  readonly read: (request: IncomingMessage) => Effect.Effect<FormRecord, ValidationError | InternalError, Scope.Scope>
}>()("@wes/http-node/MultipartReader") {
  /** Spills into a temporary directory made now and removed when the layer closes; the body limit is the caller's tier's. */
  static layer = (
    limits: Partial<MultipartLimits> = {}
  ): Layer.Layer<MultipartReader, never, FileSystem.FileSystem | Path.Path | TierPolicy> =>
    Layer.effect(MultipartReader, make({ ...defaultMultipartLimits, ...limits }))
}

// RFC 9110 media type parameters: `; name=token` or `; name="quoted string"`. multipasta throws on
// anything else, so a Content-Type is checked first.
const TOKEN = "[!#$%&'*+.^\\w`|~-]+"
const QUOTED = '"(?:[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\x20-\\x7e])*"'
const MULTIPART_CONTENT_TYPE = new RegExp(`^ *multipart/form-data *(?:; *${TOKEN}=(?:${TOKEN}|${QUOTED}) *)*$`, "i")

const invalid = (message: string, field?: string, detail?: string) =>
  new ValidationError({ message, details: field === undefined ? [] : [{ field, message: detail ?? message }] })

/** The body limit of one request: bytes, and the tier it is the `max_upload_bytes` of (none: no caller). */
export interface UploadLimit {
  readonly bytes: number
  readonly tier: Tier | undefined
}

/**
 * The 400 for a body over the limit (the contract's "400 (... file over 50MB ...)"; not 413, whose
 * body a client would not read as the contract's error): it names the limit and whose it is.
 */
const tooLarge = (limit: UploadLimit) =>
  limit.tier === undefined
    ? invalid(`Request body exceeds the ${sizeText(limit.bytes)} limit per request`, "body", `must be at most ${sizeText(limit.bytes)} (all parts together)`)
    : invalid(
      `Request body exceeds ${sizeText(limit.bytes)}, the ${limit.tier} tier's upload limit per request (max_upload_bytes)`,
      "body",
      `must be at most ${sizeText(limit.bytes)} (all parts together; the ${limit.tier} tier's max_upload_bytes)`
    )

type Limits = MultipartLimits & { readonly upload: UploadLimit }

const classify = (e: MP.MultipartError, limits: Limits): ValidationError => {
  switch (e._tag) {
    case "ReachedLimit":
      switch (e.limit) {
        case "MaxTotalSize":
        case "MaxPartSize":
          return tooLarge(limits.upload)
        case "MaxFieldSize":
          return invalid(`A text field exceeds ${sizeText(limits.maxFieldBytes)}; send large values as files`)
        case "MaxParts":
          return invalid(`A form may have at most ${limits.maxParts} parts`)
      }
    // eslint-disable-next-line no-fallthrough
    case "EndNotReached":
      return invalid("The multipart body ended without a complete part and closing boundary")
    default:
      return invalid("The multipart body is malformed")
  }
}

/** The request's Content-Type and length, checked before any byte of the body is read. */
const checkHead = (request: IncomingMessage, limits: Limits): ValidationError | undefined => {
  const contentType = request.headers["content-type"] ?? ""
  if (!contentType.toLowerCase().startsWith("multipart/form-data")) {
    return invalid("Content-Type must be multipart/form-data", "Content-Type", "must be multipart/form-data")
  }
  if (!MULTIPART_CONTENT_TYPE.test(contentType) || !/; *boundary=(?!""|;| |$)/i.test(contentType)) {
    return invalid(
      "Content-Type multipart/form-data needs a boundary parameter (a token, or a quoted string for other characters)",
      "Content-Type",
      "needs a valid boundary parameter"
    )
  }
  const length = request.headers["content-length"]
  if (length !== undefined && Number(length) === 0) return invalid("The multipart body is empty", "body", "is empty")
  if (Number(length ?? "0") > limits.upload.bytes) return tooLarge(limits.upload)
  return undefined
}

const make = (limits: MultipartLimits) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const policy = yield* TierPolicy
    /** The caller's tier's `max_upload_bytes`; without a caller, the configured `maxBytes`. */
    const limitsOf = Effect.map(Effect.serviceOption(CurrentUser), (caller): Limits => {
      if (caller._tag === "None") return { ...limits, upload: { bytes: limits.maxBytes, tier: undefined } }
      const tier = caller.value.user.tier
      return { ...limits, upload: { bytes: policy.limitsFor(tier).max_upload_bytes, tier } }
    })
    const dir = yield* Effect.orDie(fs.makeTempDirectoryScoped({ prefix: "wes-upload-", ...(limits.directory === undefined ? {} : { directory: limits.directory }) }))
    let spilled = 0
    const readBack = (file: string) => (e: { readonly message: string }) =>
      new StorageError({ message: `could not read an upload back (${path.basename(file)}): ${e.message}` })

    const fileOf = (part: Part): FormFile => {
      const held = part.content
      if (held._tag === "Memory") {
        const decoder = new TextDecoder()
        return new FormFile(part.field, part.filename, part.contentType, part.size, held.chunks, Effect.sync(() =>
          held.chunks.map((c, i) => decoder.decode(c, { stream: i < held.chunks.length - 1 })).join("")))
      }
      return new FormFile(
        part.field,
        part.filename,
        part.contentType,
        part.size,
        // The directory store copies the file itself (LocalFileContent.ts); other stores run the stream.
        fileBacked(fs.stream(held.path, { chunkSize: 1024 * 1024 }).pipe(Stream.mapError(readBack(held.path))), { path: held.path, start: 0 }),
        Effect.mapError(fs.readFileString(held.path), readBack(held.path))
      )
    }

    const read = (request: IncomingMessage) =>
      Effect.gen(function*() {
        const limits = yield* limitsOf
        const refused = checkHead(request, limits)
        if (refused !== undefined) {
          // The body nobody will read is drained, so the client sees the answer.
          request.resume()
          return yield* Effect.fail(refused)
        }
        const files: Array<string> = []
        const removeSpilled = Effect.suspend(() => Effect.forEach(files, (f) => Effect.ignore(fs.remove(f)), { discard: true, concurrency: 8 }))
        const spill = () => {
          const file = path.join(dir, `part-${++spilled}`)
          files.push(file)
          return file
        }
        // Spilled parts go when the parse fails or is interrupted, else when the scope closes. A
        // request that spilled nothing adds no finalizer (running one diffs and patches the fiber's
        // whole context: 18 of the 266 runtime steps of B1's create).
        const parsed = yield* Effect.uninterruptibleMask((restore) =>
          Effect.tap(
            Effect.onError(restore(parse(request, limits, spill)), () => removeSpilled),
            () => (files.length === 0 ? Effect.void : Effect.addFinalizer(() => removeSpilled))
          )
        )
        if (parsed._tag === "StoreFailed") {
          return yield* Effect.andThen(
            Effect.logError("could not store an upload", { error: String(parsed.error) }),
            Effect.fail(new InternalError({ status: 500, message: "The upload could not be stored" }))
          )
        }
        const record: Record<string, string | FormFile> = Object.create(null)
        for (const part of parsed.parts) record[part.field] = part._tag === "Field" ? part.value : fileOf(part)
        return record as FormRecord
      })

    return MultipartReader.of({ read })
  })

interface Part {
  readonly _tag: "File"
  readonly field: string
  readonly filename: string
  readonly contentType: string
  content: { readonly _tag: "Memory"; readonly chunks: Array<Uint8Array> } | { readonly _tag: "Disk"; readonly path: string }
  size: number
}

type Parsed =
  | { readonly _tag: "Parsed"; readonly parts: ReadonlyArray<Part | { readonly _tag: "Field"; readonly field: string; readonly value: string }> }
  | { readonly _tag: "StoreFailed"; readonly error: unknown }

/**
 * The body through multipasta, on node's stream events. Backpressure: the request is paused while
 * a spilled part's file stream is full. Fails with the contract's 400s; a part that cannot be
 * written to disk ends the parse as `StoreFailed` (logged and answered 500 by the caller).
 */
const parse = (request: IncomingMessage, limits: Limits, spill: () => string): Effect.Effect<Parsed, ValidationError> =>
  Effect.callback<Parsed, ValidationError>((resume) => {
    const parts: Array<Part | { readonly _tag: "Field"; readonly field: string; readonly value: string }> = []
    const seen = new Set<string>()
    const writers = new Set<NodeFs.WriteStream>()
    let inMemory = 0
    // Each chunk's memory is freed once a file has all of it (SpilledChunks.ts).
    const spilledChunks = makeSpilledChunks()
    let ended = false
    let finished = false
    let parsedAll = false

    const finish = (outcome: Effect.Effect<Parsed, ValidationError>) => {
      if (finished) return
      finished = true
      detach()
      resume(outcome)
    }
    const stop = (outcome: Effect.Effect<Parsed, ValidationError>) => {
      for (const w of writers) w.destroy()
      finish(outcome)
    }
    const fail = (error: ValidationError) => stop(Effect.fail(error))
    const failToStore = (error: unknown) => stop(Effect.succeed({ _tag: "StoreFailed", error }))
    // Done once the closing boundary is parsed and every spilled part is on disk.
    const maybeDone = () => {
      if (parsedAll && writers.size === 0) finish(Effect.succeed({ _tag: "Parsed", parts }))
    }
    /** Each field at most once: the forms have no repeated fields. */
    const claim = (field: string) => {
      if (!seen.has(field)) {
        seen.add(field)
        return true
      }
      fail(invalid(`${field}: is sent more than once`, field, "is sent more than once"))
      return false
    }

    /**
     * Pauses the request until `writer` has written what it holds. A part that ends within the
     * same chunk of the body ends its writer, which then finishes without a `drain`: either resumes.
     */
    const holdUntilWritten = (writer: NodeFs.WriteStream) => {
      request.pause()
      const go = () => {
        writer.off("drain", go)
        writer.off("finish", go)
        writer.off("close", go)
        if (!finished) request.resume()
      }
      writer.on("drain", go)
      writer.on("finish", go)
      writer.on("close", go)
    }

    /** Moves a part to a file: what it holds so far, then every chunk after. */
    const toDisk = (part: Part): NodeFs.WriteStream => {
      const held = part.content._tag === "Memory" ? part.content.chunks : []
      const target = spill()
      part.content = { _tag: "Disk", path: target }
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
      headers: request.headers as Record<string, string>,
      maxTotalSize: limits.upload.bytes,
      maxFieldSize: limits.maxFieldBytes,
      maxParts: limits.maxParts,
      onField: (info, value) => {
        if (claim(info.name)) parts.push({ _tag: "Field", field: info.name, value: MP.decodeField(info, value) })
      },
      onFile: (info) => {
        if (!claim(info.name)) return () => {}
        const chunks: Array<Uint8Array> = []
        const part: Part = {
          _tag: "File",
          field: info.name,
          filename: info.filename ?? info.name,
          contentType: info.contentType,
          content: { _tag: "Memory", chunks },
          size: 0
        }
        parts.push(part)
        let writer: NodeFs.WriteStream | undefined
        return (chunk) => {
          if (finished) return
          if (chunk === null) {
            writer?.end()
            return
          }
          part.size += chunk.length
          if (writer === undefined && inMemory + chunk.length <= limits.memoryBudget) {
            inMemory += chunk.length
            chunks.push(chunk)
            return
          }
          writer ??= toDisk(part)
          if (!writer.write(chunk, spilledChunks.filing(chunk)) && !request.isPaused()) holdUntilWritten(writer)
        }
      },
      onError: (error) => fail(classify(error, limits)),
      onDone: () => {
        parsedAll = true
        maybeDone()
      }
    })

    const onData = (chunk: Buffer) => {
      if (finished) return
      spilledChunks.received(chunk)
      parser.write(chunk)
      spilledChunks.parsed(chunk)
    }
    const onEnd = () => {
      ended = true
      if (finished) return
      parser.end()
      // A body that ends before its closing boundary (or before any part) is malformed.
      if (!parsedAll) fail(invalid("The multipart body ended without a complete part and closing boundary"))
    }
    const onAborted = () => fail(invalid("The request body was not received completely"))
    const onError = () => fail(invalid("The request body could not be read"))
    const detach = () => {
      request.off("data", onData)
      request.off("end", onEnd)
      request.off("aborted", onAborted)
      request.off("error", onError)
      // What the client still sends (an epilogue, or the rest of a refused body) is read and
      // dropped, as node does for a body nobody reads: a paused request would stall the
      // connection, and a client still writing would never read the answer.
      if (!ended) request.resume()
    }
    request.on("data", onData)
    request.on("end", onEnd)
    request.on("aborted", onAborted)
    request.on("error", onError)
    if (request.readableEnded) onEnd()
    return Effect.sync(() => {
      finished = true
      detach()
      for (const w of writers) w.destroy()
    })
  })
