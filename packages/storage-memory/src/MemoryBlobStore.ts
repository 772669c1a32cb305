/** Blobs in memory (tests and the embedded default). */
import { BlobStore, concatBytes, isBlobBytes, isSafeBlobKey, isSafeBlobPrefix, StorageError } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

/** Streams stored bytes in chunks of this size. */
const CHUNK = 64 * 1024

/** The bytes as one array of the store's own: what the caller does with its buffers later cannot change them. */
const ownCopy = (chunks: ReadonlyArray<Uint8Array>): Uint8Array => chunks.length === 1 ? Uint8Array.from(chunks[0]!) : concatBytes(chunks)

const invalidKey = (key: string) => new StorageError({ message: `invalid blob key ${JSON.stringify(key)}` })

/** `bytes` in chunks of CHUNK. */
const chunked = (bytes: Uint8Array) =>
  Stream.fromIterable(Array.from({ length: Math.ceil(bytes.length / CHUNK) }, (_, i) => bytes.subarray(i * CHUNK, (i + 1) * CHUNK)))

export const makeMemoryBlobStore = () => {
  const blobs = new Map<string, { readonly bytes: Uint8Array; readonly content_type: string }>()
  return BlobStore.of({
    put: (key, content, contentType) =>
      isSafeBlobKey(key)
        ? Effect.map(isBlobBytes(content) ? Effect.succeed(content) : Stream.runCollect(content), (chunks) => {
          const bytes = ownCopy(chunks)
          blobs.set(key, { bytes, content_type: contentType })
          return bytes.length
        })
        : Effect.fail(invalidKey(key)),
    get: (key, options) =>
      Effect.sync(() =>
        Option.map(Option.fromNullishOr(blobs.get(key)), ({ bytes, content_type }) => ({
          size: bytes.length,
          content_type,
          stream: chunked(options?.range === undefined ? bytes : bytes.subarray(options.range.start, options.range.end + 1))
        }))
      ),
    copy: (from, to) =>
      isSafeBlobKey(to)
        ? Effect.sync(() => {
          const blob = blobs.get(from)
          if (blob === undefined) return false
          blobs.set(to, blob)
          return true
        })
        : Effect.fail(invalidKey(to)),
    delete: (key) => Effect.sync(() => void blobs.delete(key)),
    deletePrefix: (prefix) =>
      isSafeBlobPrefix(prefix)
        ? Effect.sync(() => {
          let count = 0
          let bytes = 0
          for (const [key, blob] of blobs) {
            if (!key.startsWith(prefix)) continue
            blobs.delete(key)
            count++
            bytes += blob.bytes.length
          }
          return { blobs: count, bytes }
        })
        : Effect.fail(invalidKey(prefix)),
    signedUrl: () => Effect.succeedNone
  })
}

export const MemoryBlobStore: Layer.Layer<BlobStore> = Layer.sync(BlobStore, makeMemoryBlobStore)
