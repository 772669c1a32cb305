/**
 * Blobs as files under one directory (`WES_BLOB_DIR`). A blob's file is named by hashes of its
 * key (FsBlobNames.ts), in one of 256 shard directories made at start: a put creates no directory
 * (making per-workflow directories cost about 2 ms of kernel time per upload on ext4, and deleting
 * blobs left them behind; a shard removed meanwhile is made again), and no key can name a path
 * outside the directory. A file starts with one header line that holds the blob's content type
 * (`WESBLOB1 "image/png"\n`), then its bytes: one file per blob. Writes go to a temporary name
 * and are renamed into place once complete, so a reader never sees half a blob.
 *
 * Files written before the header existed (the type in a `<hash>.type` file beside the data), and
 * files named by the key's hash alone, are still read, copied and deleted as they are.
 *
 * A put is the upload path (B4): it calls node's file system directly (open, a `writev` per batch
 * of chunks, close, rename), not through effect's FileSystem, whose every call costs a
 * dozen steps of Effect's runtime; a multipart part spilled to a file is copied from its file
 * through one reused buffer (LocalFileContent.ts). Reads stream through FileSystem (with an
 * offset past the header, and for a range its start and length), each stream registered with its
 * file, which a download sends itself (FileDownload.ts). `deletePrefix` lists the prefix's shard
 * (FsBlobDelete.ts).
 */
import { BlobStore, isBlobBytes, isSafeBlobKey, isSafeBlobPrefix, StorageError } from "@wes/core"
import * as Effect from "effect/Effect"
import * as FileSystem from "effect/FileSystem"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Path from "effect/Path"
import * as Stream from "effect/Stream"
import * as nodeFs from "node:fs/promises"
import { deleteUnder } from "./FsBlobDelete.js"
import { blobName, legacyName, SHARDS } from "./FsBlobNames.js"
import { HEADER_MAX, header, isNotFound, parseHeader } from "./FsBlobHeader.js"
import { fileBacked, type LocalFile, localFileOf } from "./LocalFileContent.js"

/** A unique temporary name beside `file`, renamed into place once complete. */
const partOf = (file: string) => `${file}.${Date.now().toString(36)}${Math.random().toString(36).slice(2)}.part`

/** Bytes a file is copied by at a time (LocalFileContent.ts). */
const COPY_CHUNK = 1024 * 1024

/**
 * Appends the bytes of `source` to `handle` through one buffer, reused for every read (no
 * garbage per chunk); the bytes copied. Stops at `signal`'s abort (an interrupted put).
 */
const appendFile = async (handle: nodeFs.FileHandle, source: LocalFile, signal: AbortSignal): Promise<number> => {
  const from = await nodeFs.open(source.path, "r")
  try {
    const buffer = Buffer.allocUnsafeSlow(COPY_CHUNK)
    let copied = 0
    for (;;) {
      signal.throwIfAborted()
      const want = Math.min(COPY_CHUNK, (source.length ?? Number.POSITIVE_INFINITY) - copied)
      const { bytesRead } = want <= 0 ? { bytesRead: 0 } : await from.read(buffer, 0, want, source.start + copied)
      if (bytesRead === 0) return copied
      await writeAll(handle, [buffer.subarray(0, bytesRead)])
      copied += bytesRead
    }
  } finally {
    await from.close()
  }
}

/** Writes every byte of `chunks` at the file's position: one `writev`, more only if the system wrote part. */
const writeAll = async (handle: nodeFs.FileHandle, chunks: ReadonlyArray<Uint8Array>): Promise<void> => {
  let rest = chunks
  while (rest.length > 0) {
    const total = rest.reduce((n, c) => n + c.length, 0)
    let { bytesWritten } = await handle.writev(rest as Array<Uint8Array>)
    if (bytesWritten >= total) return
    const left: Array<Uint8Array> = []
    for (const c of rest) {
      if (bytesWritten >= c.length) bytesWritten -= c.length
      else {
        left.push(c.subarray(bytesWritten))
        bytesWritten = 0
      }
    }
    rest = left
  }
}

export const makeFsBlobStore = (root: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const base = path.resolve(root)
    const failed = (what: string) => (e: unknown) =>
      new StorageError({ message: `blob store: could not ${what}: ${e instanceof Error ? e.message : String(e)}` })
    const io = <A>(what: string, run: () => Promise<A>) => Effect.tryPromise({ try: run, catch: failed(what) })
    const makeShards = Effect.forEach(
      Array.from({ length: SHARDS }, (_, i) => path.join(base, i.toString(16).padStart(2, "0"))),
      (shard) => io("create its directories", () => nodeFs.mkdir(shard, { recursive: true })),
      { concurrency: 16, discard: true }
    )
    yield* makeShards

    const invalid = (key: string) => new StorageError({ message: `invalid blob key ${JSON.stringify(key)}` })
    /** The key's file (and, for a blob written before the present layout, its file then). */
    const locate = (key: string) => {
      if (!isSafeBlobKey(key)) return Effect.fail(invalid(key))
      const at = ({ name, shard }: { readonly shard: string; readonly name: string }) => {
        const file = path.join(base, shard, name)
        return { file, meta: `${file}.type` }
      }
      return Effect.succeed({ ...at(blobName(key)), legacy: at(legacyName(key)) })
    }
    /** Opens the key's file, or the file a blob of the key had before the present layout; none when neither exists. */
    const openExisting = (key: string) =>
      Effect.flatMap(locate(key), (located) =>
        io("read", async () => {
          for (const { file, meta } of [located, located.legacy]) {
            const handle = await nodeFs.open(file, "r").catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)))
            if (handle !== undefined) return { handle, file, meta }
          }
          return undefined
        }))
    // Made at start; made again if someone emptied the directory meanwhile (an existing one costs nothing).
    const makeShard = (file: string) => nodeFs.mkdir(path.dirname(file), { recursive: true })
    const ensureShard = (file: string) => io("create a directory", () => makeShard(file))
    /** Opens a new temporary file for `file`, making its shard again if it was removed. */
    const create = (file: string) => {
      const temp = partOf(file)
      const open = () => nodeFs.open(temp, "wx")
      return io("write", () => open().catch((e: unknown) => (isNotFound(e) ? makeShard(file).then(open) : Promise.reject(e))))
        .pipe(Effect.map((handle) => ({ temp, handle })))
    }
    const remove = (file: string) => Effect.promise(() => nodeFs.rm(file, { force: true }).catch(() => undefined))

    return BlobStore.of({
      put: (key, content, contentType) =>
        Effect.flatMap(locate(key), ({ file }) =>
          Effect.flatMap(create(file), ({ handle, temp }) => {
            const write = (chunks: ReadonlyArray<Uint8Array>) => io("write", () => writeAll(handle, chunks))
            let size = 0
            const sized = (parts: ReadonlyArray<Uint8Array>) => {
              for (const p of parts) size += p.length
              return parts
            }
            // A spilled upload's file is copied, not streamed (LocalFileContent.ts).
            const source = localFileOf(content)
            const written = (isBlobBytes(content)
              ? write([header(contentType), ...sized(content)])
              : Effect.andThen(
                write([header(contentType)]),
                source === undefined
                  ? Stream.runForEachArray(content, (chunk) => write(sized(chunk)))
                  : Effect.tryPromise({ try: (signal) => appendFile(handle, source, signal), catch: failed("write") })
                    .pipe(Effect.map((copied) => {
                      size = copied
                    }))
              )).pipe(Effect.map(() => size))
            return written.pipe(
              Effect.ensuring(Effect.promise(() => handle.close().catch(() => undefined))),
              Effect.tap(() => io("write", () => nodeFs.rename(temp, file))),
              // On a failure and on an interruption (a client gone mid-upload): no partial file is left.
              Effect.onError(() => remove(temp))
            )
          })),
      get: (key, options) =>
        Effect.gen(function*() {
          const found = yield* openExisting(key)
          if (found === undefined) return Option.none()
          const { file, handle: opened, meta } = found
          const { first, size } = yield* io("read", async () => {
            try {
              const buffer = Buffer.alloc(HEADER_MAX)
              const { bytesRead } = await opened.read(buffer, 0, HEADER_MAX, 0)
              return { first: buffer.subarray(0, bytesRead), size: (await opened.stat()).size }
            } finally {
              await opened.close()
            }
          })
          const parsed = parseHeader(first)
          const contentType = parsed?.contentType ??
            (yield* io("read", () => nodeFs.readFile(meta, "utf8")).pipe(Effect.orElseSucceed(() => "application/octet-stream")))
          const offset = parsed?.length ?? 0
          const range = options?.range
          const start = offset + (range?.start ?? 0)
          const length = range === undefined ? size - offset : Math.max(0, range.end - range.start + 1)
          return Option.some({
            size: size - offset,
            content_type: contentType,
            // Its file, for whoever can send it without running the stream (LocalFileContent.ts).
            stream: fileBacked(
              fs.stream(file, { chunkSize: 1024 * 1024, offset: start, bytesToRead: length }).pipe(Stream.mapError(failed("read"))),
              { path: file, start, length }
            )
          })
        }),
      copy: (from, to) =>
        Effect.gen(function*() {
          const target = yield* locate(to)
          const source = yield* openExisting(from)
          if (source === undefined) return false
          yield* io("copy", () => source.handle.close())
          yield* ensureShard(target.file)
          // Like a put: the copy appears under its name only once it is whole.
          const temp = partOf(target.file)
          const copied = yield* io("copy", () => nodeFs.copyFile(source.file, temp).then(() => true, (e: unknown) => (isNotFound(e) ? false : Promise.reject(e))))
          if (!copied) return false
          // A file from before the header keeps its type beside it.
          yield* io("copy", () => nodeFs.copyFile(source.meta, target.meta).catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)))).pipe(
            Effect.andThen(io("copy", () => nodeFs.rename(temp, target.file))),
            Effect.tapError(() => remove(temp))
          )
          return true
        }),
      delete: (key) =>
        Effect.flatMap(locate(key), ({ file, legacy, meta }) =>
          Effect.andThen(
            io("delete", () => Promise.all([nodeFs.rm(file, { force: true }), nodeFs.rm(legacy.file, { force: true })])),
            // A type file exists only beside a blob written before the header (or a copy of one).
            Effect.andThen(remove(meta), remove(legacy.meta))
          )),
      deletePrefix: (prefix) =>
        isSafeBlobPrefix(prefix) ? io("delete", () => deleteUnder(base, prefix)) : Effect.fail(invalid(prefix)),
      signedUrl: () => Effect.succeedNone
    })
  })

/** A blob store in `root` (created if missing). */
export const FsBlobStoreLive = (root: string): Layer.Layer<BlobStore, StorageError, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(BlobStore, makeFsBlobStore(root))
