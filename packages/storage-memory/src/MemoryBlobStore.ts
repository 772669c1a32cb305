/** Blobs in memory (tests and the embedded default). */
import { BlobStore, isBlobBytes, isSafeBlobKey, StorageError } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

/** Streams stored bytes in chunks of this size. */
const CHUNK = 64 * 1024

const concat = (chunks: Iterable<Uint8Array>): Uint8Array => {
  let size = 0
  for (const c of chunks) size += c.length
  const out = new Uint8Array(size)
  let offset = 0
  for (const c of chunks) {
    out.set(c, offset)
    offset += c.length
  }
  return out
}

const invalidKey = (key: string) => new StorageError({ message: `invalid blob key ${JSON.stringify(key)}` })

export const makeMemoryBlobStore = () => {
  const blobs = new Map<string, { readonly bytes: Uint8Array; readonly content_type: string }>()
  return BlobStore.of({
    put: (key, content, contentType) =>
      isSafeBlobKey(key)
        ? Effect.map(isBlobBytes(content) ? Effect.succeed<Iterable<Uint8Array>>(content) : Stream.runCollect(content), (chunks) => {
          const bytes = concat(chunks)
          blobs.set(key, { bytes, content_type: contentType })
          return bytes.length
        })
        : Effect.fail(invalidKey(key)),
    get: (key) =>
      Effect.sync(() =>
        Option.map(Option.fromNullishOr(blobs.get(key)), ({ bytes, content_type }) => ({
          size: bytes.length,
          content_type,
          stream: Stream.fromIterable(
            Array.from({ length: Math.ceil(bytes.length / CHUNK) }, (_, i) => bytes.subarray(i * CHUNK, (i + 1) * CHUNK))
          )
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
    delete: (key) => Effect.sync(() => void blobs.delete(key))
  })
}

export const MemoryBlobStore: Layer.Layer<BlobStore> = Layer.sync(BlobStore, makeMemoryBlobStore)
