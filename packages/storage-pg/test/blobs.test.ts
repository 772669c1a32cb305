import { expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import { BlobStore, StorageError } from "@wes/core"
import { Fixtures as F } from "@wes/core/testing"
import { BLOB_CHUNK_SIZE, deletePrefixStatement, sweepOrphanChunks } from "@wes/storage-pg"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { freshStore } from "./harness.js"

const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 7 + seed) & 0xff)

/** `data` cut into pieces of awkward sizes, as an upload arrives. */
const pieces = (data: Uint8Array) => {
  const out: Array<Uint8Array> = []
  for (let offset = 0, size = 1; offset < data.length; offset += size, size = (size * 3 + 17) % 100_003) {
    out.push(data.subarray(offset, offset + size))
  }
  return Stream.fromIterable(out)
}

const chunkRows = Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM blob_chunks`)
  .pipe(Effect.map((rows) => rows[0]!.n))

layer(freshStore(), { excludeTestServices: true })("bytea blob store", (it) => {
  it.effect("stores a large blob in 256 KiB chunks and streams it back chunk by chunk", () =>
    Effect.gen(function*() {
      const blobs = yield* BlobStore
      const key = `outputs/${F.uuid()}/o/big.bin`
      const data = bytes(4 * BLOB_CHUNK_SIZE + 5, 3)
      const before = yield* chunkRows
      expect(yield* blobs.put(key, pieces(data), "application/octet-stream")).toBe(data.length)
      expect((yield* chunkRows) - before).toBe(5)
      const blob = Option.getOrThrow(yield* blobs.get(key))
      const parts = yield* Stream.runCollect(blob.stream)
      expect(parts.map((p) => p.length)).toEqual([BLOB_CHUNK_SIZE, BLOB_CHUNK_SIZE, BLOB_CHUNK_SIZE, BLOB_CHUNK_SIZE, 5])
      expect(Buffer.concat(parts).equals(Buffer.from(data))).toBe(true)
    }))

  it.effect("an empty blob has size 0 and an empty stream", () =>
    Effect.gen(function*() {
      const blobs = yield* BlobStore
      const key = `inputs/${F.uuid()}/p/empty.txt`
      expect(yield* blobs.put(key, Stream.empty, "text/plain")).toBe(0)
      const blob = Option.getOrThrow(yield* blobs.get(key))
      expect([blob.size, blob.content_type, (yield* Stream.runCollect(blob.stream)).length]).toEqual([0, "text/plain", 0])
    }))

  it.effect("replacing a blob drops its old chunks; a put that fails midway keeps the old blob and leaves nothing", () =>
    Effect.gen(function*() {
      const blobs = yield* BlobStore
      const key = `inputs/${F.uuid()}/p/a.bin`
      const before = yield* chunkRows
      yield* blobs.put(key, Stream.make(bytes(3 * BLOB_CHUNK_SIZE, 1)), "application/octet-stream")
      yield* blobs.put(key, Stream.make(bytes(10, 2)), "image/png")
      expect((yield* chunkRows) - before).toBe(1)
      const failing = Stream.concat(
        Stream.make(bytes(2 * BLOB_CHUNK_SIZE, 9)),
        Stream.fail(new StorageError({ message: "client went away" }))
      )
      const error = yield* blobs.put(key, failing, "text/plain").pipe(Effect.flip)
      expect(error.message).toBe("client went away")
      expect((yield* chunkRows) - before).toBe(1)
      const blob = Option.getOrThrow(yield* blobs.get(key))
      expect([blob.size, blob.content_type]).toEqual([10, "image/png"])
      yield* blobs.delete(key)
      expect((yield* chunkRows) - before).toBe(0)
    }))

  it.effect("a reader of a blob that is deleted meanwhile fails with StorageError", () =>
    Effect.gen(function*() {
      const blobs = yield* BlobStore
      const key = `inputs/${F.uuid()}/p/b.bin`
      yield* blobs.put(key, Stream.make(bytes(2 * BLOB_CHUNK_SIZE, 4)), "application/octet-stream")
      const blob = Option.getOrThrow(yield* blobs.get(key))
      yield* blobs.delete(key)
      const error = yield* Stream.runDrain(blob.stream).pipe(Effect.flip)
      expect(error._tag).toBe("StorageError")
    }))

  it.effect("sweepOrphanChunks removes old chunks no key points at", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const blobs = yield* BlobStore
      const kept = `inputs/${F.uuid()}/p/kept.bin`
      yield* blobs.put(kept, Stream.make(bytes(5, 5)), "application/octet-stream")
      yield* sql`UPDATE blob_chunks SET created_at = now() - interval '2 days'`
      yield* sql`INSERT INTO blob_chunks (blob_id, n, data, created_at) VALUES (${F.uuid()}, 0, '\\x00', now() - interval '2 days')`
      expect(yield* sweepOrphanChunks()).toBe(1)
      expect(Option.map(yield* blobs.get(kept), (b) => b.size)).toEqual(Option.some(5))
    }))

  it.effect("a range reads only the chunks it covers, and of its first and last chunk only its bytes", () =>
    Effect.gen(function*() {
      const blobs = yield* BlobStore
      const key = `outputs/${F.uuid()}/o/clip.mp4`
      const data = bytes(4 * BLOB_CHUNK_SIZE + 5, 6)
      yield* blobs.put(key, pieces(data), "video/mp4")
      const blob = Option.getOrThrow(yield* blobs.get(key, { range: { start: BLOB_CHUNK_SIZE - 5, end: 2 * BLOB_CHUNK_SIZE + 4 } }))
      const parts = yield* Stream.runCollect(blob.stream)
      expect([blob.size, parts.map((p) => p.length)]).toEqual([data.length, [5, BLOB_CHUNK_SIZE, 5]])
      expect(Buffer.concat(parts).equals(Buffer.from(data.subarray(BLOB_CHUNK_SIZE - 5, 2 * BLOB_CHUNK_SIZE + 5)))).toBe(true)
    }))

  it.effect("deletePrefix removes the chunks too, and is a range scan of the key index on a large table", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const blobs = yield* BlobStore
      const w = F.uuid()
      const before = yield* chunkRows
      yield* blobs.put(`outputs/${w}/o/a.bin`, pieces(bytes(3 * BLOB_CHUNK_SIZE, 1)), "application/octet-stream")
      yield* blobs.put(`outputs/${w}/o/b.bin`, Stream.make(bytes(10, 2)), "application/octet-stream")
      expect(yield* blobs.deletePrefix(`outputs/${w}/`)).toEqual({ blobs: 2, bytes: 3 * BLOB_CHUNK_SIZE + 10 })
      expect((yield* chunkRows) - before).toBe(0)
      yield* sql`INSERT INTO blobs (key, blob_id, content_type, size, chunks)
        SELECT 'outputs/' || gen_random_uuid() || '/o/' || i || '.png', gen_random_uuid(), 'image/png', 10, 1
        FROM generate_series(1, 50000) AS i`
      yield* sql`ANALYZE blobs`
      const [text, params] = deletePrefixStatement(sql, `outputs/${w}/`).compile()
      const plan = (yield* sql.unsafe<{ "QUERY PLAN": string }>(`EXPLAIN ${text}`, params)).map((r) => r["QUERY PLAN"]).join("\n")
      expect(plan).toMatch(/Index (Only )?Scan using blobs_key_bytes|Bitmap Index Scan on blobs_key_bytes/)
    }))
})
