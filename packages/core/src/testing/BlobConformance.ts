/**
 * What a blob store must do: the cases every `BlobStore` runs (memory, PostgreSQL, a directory,
 * S3), inside the store conformance suite or alone (`runBlobConformance` in testing.ts).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { BlobStore } from "../ports/BlobStore.js"
import { equal, failure, ok } from "./Assert.js"
import * as F from "./Fixtures.js"

/** One case: a name and an effect over a store's `BlobStore`. */
export interface BlobCase {
  readonly name: string
  readonly run: Effect.Effect<void, unknown, BlobStore>
}

const c = (name: string, run: Effect.Effect<void, unknown, BlobStore>): BlobCase => ({ name, run })

/** `n` bytes of a pattern that differs with `seed` and repeats only every 256 x 31 bytes. */
const bytes = (n: number, seed: number) => {
  const out = new Uint8Array(n)
  for (let i = 0; i < n; i++) out[i] = (i * 31 + seed) & 0xff
  return out
}

const concat = (chunks: ReadonlyArray<Uint8Array>) => {
  const out = new Uint8Array(chunks.reduce((n, x) => n + x.length, 0))
  let offset = 0
  for (const x of chunks) {
    out.set(x, offset)
    offset += x.length
  }
  return out
}

/** The blob under `key` as its size, type and bytes (of `range` if given); none when absent. */
const read = (key: string, range?: { readonly start: number; readonly end: number }) =>
  Effect.flatMap(BlobStore.use((blobs) => blobs.get(key, { range })), Option.match({
    onNone: () => Effect.succeedNone,
    onSome: (blob) => Effect.map(Stream.runCollect(blob.stream), (chunks) => Option.some({ size: blob.size, type: blob.content_type, bytes: concat(chunks) }))
  }))

const UNSAFE_KEYS = ["../etc/passwd", "/etc/passwd", "inputs/../../x", "inputs//x", "inputs/x/..", "", "inputs/a b"]
const UNSAFE_PREFIXES = ["", "/", "../", "inputs", "inputs/../", "inputs//", "/etc/"]

/** FNV-1a over a stream of chunks, with the count and the largest chunk: a multi-MB blob checked without holding it. */
const digest = <E, R>(stream: Stream.Stream<Uint8Array, E, R>) =>
  Stream.runFold(stream, () => ({ hash: 0x811c9dc5, size: 0, chunks: 0, largest: 0 }), (acc, chunk) => {
    let hash = acc.hash
    for (let i = 0; i < chunk.length; i++) hash = Math.imul(hash ^ chunk[i]!, 16777619) >>> 0
    return { hash, size: acc.size + chunk.length, chunks: acc.chunks + 1, largest: Math.max(acc.largest, chunk.length) }
  })

export interface BlobConformanceOptions {
  /** The store answers `signedUrl` with a URL (S3) rather than none (memory, PostgreSQL, a directory). */
  readonly signsUrls?: boolean
  /** Bytes of the large blob streamed in and out (8 MiB). */
  readonly largeBlobBytes?: number
}

export const blobConformanceCases = (options: BlobConformanceOptions = {}): ReadonlyArray<BlobCase> => [
  c("blobs: put streams bytes in (or takes them from memory); get streams the same bytes out with size and content type", Effect.forEach(["stream", "bytes in memory"] as const, (form) => Effect.gen(function*() {
    const blobs = yield* BlobStore
    const key = `inputs/${F.uuid()}/image/cat.png`
    const parts = [bytes(70_000, 1), bytes(3, 2), bytes(100_000, 3)]
    yield* equal(yield* blobs.put(key, form === "stream" ? Stream.fromIterable(parts) : parts, "image/png"), 170_003, `bytes written (${form})`)
    yield* equal(yield* read(key), Option.some({ size: 170_003, type: "image/png", bytes: concat(parts) }), `same bytes (${form})`)
    yield* blobs.put(key, [bytes(5, 9)], "image/webp")
    yield* equal(yield* read(key), Option.some({ size: 5, type: "image/webp", bytes: bytes(5, 9) }), `a second put replaces the blob (${form})`)
  }), { discard: true })),
  c("blobs: a range streams only its bytes (end inclusive) and keeps the whole size", Effect.gen(function*() {
    const blobs = yield* BlobStore
    const key = `outputs/${F.uuid()}/9/clip.mp4`
    const data = bytes(600_000, 4)
    yield* blobs.put(key, Stream.fromIterable([data.subarray(0, 1000), data.subarray(1000)]), "video/mp4")
    // Single bytes, a piece inside the first 256 KiB, pieces across 256 KiB boundaries, the tail, the whole.
    for (const [start, end] of [[0, 0], [599_999, 599_999], [5, 10], [262_140, 262_150], [200_000, 530_000], [524_288, 599_999], [0, 599_999]] as const) {
      yield* equal(yield* read(key, { start, end }), Option.some({ size: 600_000, type: "video/mp4", bytes: data.subarray(start, end + 1) }), `bytes ${start}-${end}`)
    }
    yield* equal(yield* read(`outputs/${F.uuid()}/9/none.mp4`, { start: 0, end: 1 }), Option.none(), "a range of a missing blob")
  })),
  c("blobs: copy, delete, and missing keys", Effect.gen(function*() {
    const blobs = yield* BlobStore
    const a = `inputs/${F.uuid()}/p/a.bin`
    const b = `inputs/${F.uuid()}/p/b.bin`
    yield* blobs.put(a, Stream.make(bytes(10, 7)), "application/octet-stream")
    yield* equal(yield* blobs.copy(a, b), true, "copied")
    yield* blobs.delete(a)
    yield* equal(yield* blobs.get(a), Option.none(), "deleted")
    yield* equal(yield* read(b), Option.some({ size: 10, type: "application/octet-stream", bytes: bytes(10, 7) }), "the copy survives")
    yield* equal(yield* blobs.copy(a, `inputs/${F.uuid()}/p/c.bin`), false, "copy of a missing blob")
    yield* blobs.delete(a)
    yield* equal(yield* blobs.get(`outputs/${F.uuid()}/x/y.png`), Option.none(), "missing")
  })),
  c("blobs: deletePrefix removes every blob under the prefix and only those, and counts them", Effect.gen(function*() {
    const blobs = yield* BlobStore
    const w = F.uuid()
    const inside = [[`outputs/${w}/1/a.png`, 1000], [`outputs/${w}/1/b.png`, 5], [`outputs/${w}/2/c.webm`, 70_000], [`outputs/${w}/2/empty.txt`, 0]] as const
    // Keys that share the prefix's text without being under it (in byte order around `/`), and the same workflow's inputs.
    const outside = [`outputs/${w}-x/1/a.png`, `outputs/${w}0/1/a.png`, `outputs/${w}.x/1/a.png`, `outputs/${w}_x/1/a.png`, `outputs/${w}/`.slice(0, -1) + "z/1/a.png", `inputs/${w}/p/a.png`]
    for (const [key, size] of inside) yield* blobs.put(key, [bytes(size, 1)], "image/png")
    for (const key of outside) yield* blobs.put(key, [bytes(3, 2)], "image/png")
    yield* equal(yield* blobs.deletePrefix(`outputs/${w}/2/`), { blobs: 2, bytes: 70_000 }, "one output's files")
    yield* equal(yield* blobs.deletePrefix(`outputs/${w}/`), { blobs: 2, bytes: 1005 }, "the rest of the workflow's outputs")
    for (const [key] of inside) yield* equal(yield* blobs.get(key), Option.none(), `${key} deleted`)
    for (const key of outside) yield* equal(Option.map(yield* read(key), (x) => x.size), Option.some(3), `${key} kept`)
    yield* equal(yield* blobs.deletePrefix(`outputs/${w}/`), { blobs: 0, bytes: 0 }, "nothing left to delete")
    yield* blobs.put(inside[0][0], [bytes(7, 3)], "image/png")
    yield* equal(Option.map(yield* read(inside[0][0]), (x) => x.size), Option.some(7), "a key is written again after its prefix was deleted")
  })),
  c("blobs: keys and prefixes that could escape the store are rejected", Effect.gen(function*() {
    const blobs = yield* BlobStore
    for (const key of UNSAFE_KEYS) {
      const err = yield* failure(blobs.put(key, Stream.make(bytes(1, 1)), "text/plain"), `put ${JSON.stringify(key)}`)
      yield* equal(err._tag, "StorageError", `put ${JSON.stringify(key)}`)
    }
    const source = `inputs/${F.uuid()}/p/a.bin`
    yield* blobs.put(source, [bytes(1, 1)], "text/plain")
    yield* equal((yield* failure(blobs.copy(source, "../x/y"), "copy to ../x/y"))._tag, "StorageError", "copy to ../x/y")
    for (const prefix of UNSAFE_PREFIXES) {
      const err = yield* failure(blobs.deletePrefix(prefix), `deletePrefix ${JSON.stringify(prefix)}`)
      yield* equal(err._tag, "StorageError", `deletePrefix ${JSON.stringify(prefix)}`)
    }
    yield* equal(Option.map(yield* read(source), (x) => x.size), Option.some(1), "nothing was deleted")
  })),
  c("blobs: a multi-MB blob is streamed in and out in pieces", Effect.gen(function*() {
    const blobs = yield* BlobStore
    const total = options.largeBlobBytes ?? 8 * 1024 * 1024
    const piece = 64 * 1024
    const pieceAt = (i: number) => bytes(Math.min(piece, total - i * piece), i)
    /** The blob's bytes from `start` on, as the pieces it was written in. */
    const from = (start: number) =>
      Stream.range(Math.floor(start / piece), Math.ceil(total / piece) - 1).pipe(Stream.map((i) => pieceAt(i).subarray(Math.max(0, start - i * piece))))
    const key = `outputs/${F.uuid()}/1/large.bin`
    yield* equal(yield* blobs.put(key, from(0), "application/octet-stream"), total, "bytes written")
    const [sent, back] = yield* Effect.all([digest(from(0)), digest(Option.getOrThrow(yield* blobs.get(key)).stream)])
    yield* equal([back.hash, back.size], [sent.hash, sent.size], "the same bytes come back")
    yield* ok(back.chunks > 1 && back.largest <= 2 * 1024 * 1024, `streamed in pieces of at most 2 MiB (got ${back.chunks}, the largest ${back.largest} bytes)`)
    const start = Math.floor(total / 2) - 3
    const [tail, ranged] = yield* Effect.all([digest(from(start)), digest(Option.getOrThrow(yield* blobs.get(key, { range: { start, end: total - 1 } })).stream)])
    yield* equal([ranged.hash, ranged.size], [tail.hash, tail.size], "its second half by range")
    yield* blobs.delete(key)
  })),
  c("blobs: signedUrl", Effect.gen(function*() {
    const blobs = yield* BlobStore
    const key = `outputs/${F.uuid()}/1/cat.png`
    yield* blobs.put(key, [bytes(4, 1)], "image/png")
    const url = yield* blobs.signedUrl(key, { content_type: "image/png", content_disposition: "inline; filename=cat.png", expires_in_seconds: 60 })
    yield* options.signsUrls === true
      ? ok(Option.isSome(url) && /^https?:\/\//.test(url.value), `a URL (got ${JSON.stringify(url)})`)
      : equal(url, Option.none(), "this store serves blobs only through get")
  }))
]
