/**
 * Blobs as files under one directory (`WES_BLOB_DIR`). Writes go to a temporary name and are
 * renamed into place, so a reader never sees half a file; each blob's content type sits beside
 * it under `.meta/`. Keys are checked twice: by shape (`isSafeBlobKey`) and by resolved path.
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Path from "@effect/platform/Path"
import { BlobStore, isSafeBlobKey, StorageError } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

const META = ".meta"

export const makeFsBlobStore = (root: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const base = path.resolve(root)
    const failed = (what: string) => (e: { readonly message: string }) => new StorageError({ message: `blob store: could not ${what}: ${e.message}` })
    yield* fs.makeDirectory(path.join(base, META), { recursive: true }).pipe(Effect.mapError(failed("create its directory")))

    const locate = (key: string) => {
      if (!isSafeBlobKey(key)) return Effect.fail(new StorageError({ message: `invalid blob key ${JSON.stringify(key)}` }))
      const file = path.resolve(base, key)
      if (!file.startsWith(base + path.sep)) return Effect.fail(new StorageError({ message: `invalid blob key ${JSON.stringify(key)}` }))
      return Effect.succeed({ file, meta: path.join(base, META, key) })
    }
    const exists = (file: string) => fs.exists(file).pipe(Effect.mapError(failed("read")))
    const ensureParent = (file: string) => fs.makeDirectory(path.dirname(file), { recursive: true }).pipe(Effect.mapError(failed("create a directory")))

    return BlobStore.of({
      put: (key, content, contentType) =>
        Effect.gen(function*() {
          const { file, meta } = yield* locate(key)
          yield* ensureParent(file)
          yield* ensureParent(meta)
          const temp = `${file}.${Date.now().toString(36)}${Math.random().toString(36).slice(2)}.part`
          let size = 0
          yield* content.pipe(
            Stream.tap((chunk) => Effect.sync(() => (size += chunk.length))),
            Stream.run(fs.sink(temp)),
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
          if (!(yield* exists(file))) return Option.none()
          const info = yield* fs.stat(file).pipe(Effect.mapError(failed("read")))
          const contentType = yield* fs.readFileString(meta).pipe(Effect.orElseSucceed(() => "application/octet-stream"))
          return Option.some({
            size: Number(info.size),
            content_type: contentType,
            stream: fs.stream(file).pipe(Stream.mapError(failed("read")))
          })
        }),
      copy: (from, to) =>
        Effect.gen(function*() {
          const source = yield* locate(from)
          const target = yield* locate(to)
          if (!(yield* exists(source.file))) return false
          yield* ensureParent(target.file)
          yield* ensureParent(target.meta)
          yield* fs.copyFile(source.file, target.file).pipe(Effect.mapError(failed("copy")))
          yield* fs.copyFile(source.meta, target.meta).pipe(Effect.orElse(() => fs.writeFileString(target.meta, "application/octet-stream")), Effect.mapError(failed("copy")))
          return true
        }),
      delete: (key) =>
        Effect.gen(function*() {
          const { file, meta } = yield* locate(key)
          yield* fs.remove(file).pipe(Effect.catchTag("SystemError", (e) => e.reason === "NotFound" ? Effect.void : Effect.fail(failed("delete")(e))), Effect.mapError(failed("delete")))
          yield* Effect.ignore(fs.remove(meta))
        })
    })
  })

/** A blob store in `root` (created if missing). */
export const FsBlobStoreLive = (root: string): Layer.Layer<BlobStore, StorageError, FileSystem.FileSystem | Path.Path> =>
  Layer.effect(BlobStore, makeFsBlobStore(root))
