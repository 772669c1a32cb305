/**
 * Blobs as files under one directory (`WES_BLOB_DIR`). A blob's file is named by the SHA-256 of
 * its key, in one of 256 shard directories made at start: a put creates no directory (making
 * per-workflow directories cost about 2 ms of kernel time per upload on ext4, and deleting blobs
 * left them behind; a shard removed meanwhile is made again), and no key can name a path outside the directory. The content type sits
 * beside the data (`<hash>.type`). Writes go to a temporary name and are renamed into place
 * after the type is written, so a reader never sees half a blob.
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { BlobStore, isSafeBlobKey, StorageError } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { createHash } from "node:crypto"

const SHARDS = 256

/** A unique temporary name beside `file`, renamed into place once complete. */
const partOf = (file: string) => `${file}.${Date.now().toString(36)}${Math.random().toString(36).slice(2)}.part`

export const makeFsBlobStore = (root: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const base = path.resolve(root)
    const failed = (what: string) => (e: { readonly message: string }) => new StorageError({ message: `blob store: could not ${what}: ${e.message}` })
    yield* Effect.forEach(
      Array.from({ length: SHARDS }, (_, i) => i.toString(16).padStart(2, "0")),
      (shard) => fs.makeDirectory(path.join(base, shard), { recursive: true }),
      { concurrency: 16, discard: true }
    ).pipe(Effect.mapError(failed("create its directories")))

    const locate = (key: string) => {
      if (!isSafeBlobKey(key)) return Effect.fail(new StorageError({ message: `invalid blob key ${JSON.stringify(key)}` }))
      const hash = createHash("sha256").update(key).digest("hex")
      const file = path.join(base, hash.slice(0, 2), hash)
      return Effect.succeed({ file, meta: `${file}.type` })
    }
    const notFound = (e: { readonly _tag: string; readonly reason?: string }) => e._tag === "SystemError" && e.reason === "NotFound"
    // Made at start; made again if someone emptied the directory meanwhile (an existing one costs nothing).
    const ensureShard = (file: string) => fs.makeDirectory(path.dirname(file), { recursive: true }).pipe(Effect.mapError(failed("create a directory")))

    return BlobStore.of({
      put: (key, content, contentType) =>
        Effect.gen(function*() {
          const { file, meta } = yield* locate(key)
          const temp = partOf(file)
          // The shard exists (made at start); one removed since is made again and the write retried.
          const write = Effect.scoped(Effect.flatMap(fs.open(temp, { flag: "w" }), (handle) =>
            Stream.runFoldEffect(content, 0, (size, chunk) => Effect.as(handle.writeAll(chunk), size + chunk.length))))
          const size = yield* write.pipe(
            Effect.catchIf(notFound, () => Effect.zipRight(ensureShard(file), write)),
            Effect.catchTags({ SystemError: (e) => Effect.fail(failed("write")(e)), BadArgument: (e) => Effect.fail(failed("write")(e)) }),
            Effect.tapError(() => Effect.ignore(fs.remove(temp)))
          )
          yield* fs.writeFileString(meta, contentType).pipe(Effect.mapError(failed("write")))
          yield* fs.rename(temp, file).pipe(Effect.mapError(failed("write")))
          return size
        }),
      get: (key) =>
        Effect.gen(function*() {
          const { file, meta } = yield* locate(key)
          const info = yield* fs.stat(file).pipe(
            Effect.map(Option.some),
            Effect.catchIf(notFound, () => Effect.succeed(Option.none())),
            Effect.mapError(failed("read"))
          )
          if (Option.isNone(info)) return Option.none()
          const contentType = yield* fs.readFileString(meta).pipe(Effect.orElseSucceed(() => "application/octet-stream"))
          return Option.some({
            size: Number(info.value.size),
            content_type: contentType,
            stream: fs.stream(file, { chunkSize: FileSystem.MiB(1) }).pipe(Stream.mapError(failed("read")))
          })
        }),
      copy: (from, to) =>
        Effect.gen(function*() {
          const source = yield* locate(from)
          const target = yield* locate(to)
          yield* ensureShard(target.file)
          // Like a put: the copy appears under its name only once its type is in place.
          const temp = partOf(target.file)
          const copied = yield* fs.copyFile(source.file, temp).pipe(
            Effect.as(true),
            Effect.catchIf(notFound, () => Effect.succeed(false)),
            Effect.mapError(failed("copy"))
          )
          if (!copied) return false
          yield* fs.copyFile(source.meta, target.meta).pipe(
            Effect.orElse(() => fs.writeFileString(target.meta, "application/octet-stream")),
            Effect.zipRight(fs.rename(temp, target.file)),
            Effect.tapError(() => Effect.ignore(fs.remove(temp))),
            Effect.mapError(failed("copy"))
          )
          return true
        }),
      delete: (key) =>
        Effect.gen(function*() {
          const { file, meta } = yield* locate(key)
          yield* fs.remove(file).pipe(Effect.catchIf(notFound, () => Effect.void), Effect.mapError(failed("delete")))
          yield* Effect.ignore(fs.remove(meta))
        })
    })
  })

/** A blob store in `root` (created if missing). */
export const FsBlobStoreLive = (root: string): Layer.Layer<BlobStore, StorageError, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(BlobStore, makeFsBlobStore(root))
