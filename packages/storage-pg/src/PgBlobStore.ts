/**
 * Blobs in PostgreSQL `bytea` chunks of 256 KiB: transactional and needs nothing but the
 * database, so every instance sees every blob. Neither a put nor a get holds more than a chunk
 * in memory, but every byte lives in the database (its size, its backups, its WAL): fine for
 * inputs and outputs of moderate size; for many large files use a filesystem or object store.
 *
 * A put writes the chunks under a fresh `blob_id` first, then switches the key to it in one
 * short transaction and drops the previous chunks, so readers never see a half-written blob.
 * A reader streaming a blob that is replaced or deleted meanwhile fails with `StorageError`.
 * Chunks of a put that dies with its process stay behind unreferenced (no reader can reach
 * them); `sweepOrphanChunks` removes them.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { type Blob, type BlobContent, type BlobRange, BlobStore, concatBytes, isBlobBytes, isSafeBlobKey, isSafeBlobPrefix, StorageError } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { type ChunkSlice, chunkSlice, chunksOf, deletePrefixStatement } from "./PgBlobRange.js"
import { decodeFirst, LockNamespace, orStorageError, readCount, run, transaction } from "./Sql.js"

/** Bytes per stored chunk. */
export const BLOB_CHUNK_SIZE = 256 * 1024

const BlobRow = Schema.Struct({
  blob_id: Schema.String,
  content_type: Schema.String,
  size: Schema.Number,
  chunks: Schema.Int
})
const ChunkRow = Schema.Struct({ data: Schema.Uint8Array })
const DeletedRow = Schema.Struct({ blobs: Schema.Int, bytes: Schema.Number })

const invalidKey = (key: string) =>
  new StorageError({ message: `PostgreSQL store: invalid blob key ${JSON.stringify(key.slice(0, 200))}` })

const asBuffer = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

export const makePgBlobStore = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const decodeBlob = decodeFirst(BlobRow)
  const decodeChunk = decodeFirst(ChunkRow)
  const decodeDeleted = decodeFirst(DeletedRow)

  /** Every writer of a key holds this lock until its transaction ends. */
  const lockKey = (key: string) =>
    run(sql`SELECT pg_advisory_xact_lock(${sql.literal(String(LockNamespace.blobKey))}, hashtext(${key}))`).pipe(
      orStorageError("blobs (key lock)")
    )

  const insertChunk = (blobId: string, n: number, bytes: Uint8Array) =>
    run(sql`INSERT INTO blob_chunks (blob_id, n, data) VALUES (${blobId}, ${n}, ${asBuffer(bytes)})`).pipe(
      orStorageError("blobs.put (chunk)")
    )

  /**
   * Writes `content` as chunks of `blobId`, re-cut to BLOB_CHUNK_SIZE whatever the sizes that
   * arrive. Content that fits one chunk is not written but handed back (`held`): most outputs and
   * inputs do, and then the whole put is one statement (`putSmall`).
   */
  const writeChunks = (blobId: string, content: BlobContent) =>
    Effect.gen(function*() {
      let pending: Array<Uint8Array> = []
      let pendingSize = 0
      let chunks = 0
      let size = 0
      let held: Uint8Array | undefined
      const write = (bytes: Uint8Array) => insertChunk(blobId, chunks++, bytes)
      const flush = Effect.suspend(() => {
        const bytes = concatBytes(pending)
        pending = []
        pendingSize = 0
        // A second chunk: the first one, held so far, goes first.
        if (held !== undefined) {
          const first = held
          held = undefined
          return Effect.andThen(write(first), write(bytes))
        }
        if (chunks === 0) {
          held = bytes
          return Effect.void
        }
        return write(bytes)
      })
      const take = (piece: Uint8Array) =>
        Effect.gen(function*() {
          size += piece.length
          let offset = 0
          while (offset < piece.length) {
            const taken = Math.min(BLOB_CHUNK_SIZE - pendingSize, piece.length - offset)
            pending.push(piece.subarray(offset, offset + taken))
            pendingSize += taken
            offset += taken
            if (pendingSize === BLOB_CHUNK_SIZE) yield* flush
          }
        })
      if (isBlobBytes(content)) for (const piece of content) yield* take(piece)
      else yield* Stream.runForEach(content, take)
      if (pendingSize > 0) yield* flush
      return { chunks, size, held }
    })

  /**
   * A new key whose content fits one chunk: its row and chunk in one statement. False when the key
   * exists already (a replacement takes the locked path).
   */
  const putSmall = (key: string, blobId: string, contentType: string, bytes: Uint8Array) =>
    run(sql`WITH k AS (
        INSERT INTO blobs (key, blob_id, content_type, size, chunks)
        VALUES (${key}, ${blobId}, ${contentType}, ${bytes.length}, ${bytes.length === 0 ? 0 : 1})
        ON CONFLICT (key) DO NOTHING RETURNING blob_id
      ), c AS (
        INSERT INTO blob_chunks (blob_id, n, data) SELECT blob_id, 0, ${asBuffer(bytes)} FROM k WHERE ${bytes.length} > 0
      )
      SELECT count(*)::int AS n FROM k`).pipe(
      Effect.flatMap(readCount),
      Effect.map((n) => n === 1),
      orStorageError("blobs.put")
    )

  /** Points `key` at `blobId` and drops the chunks it pointed at before. Call with the key's lock held. */
  const switchKey = (key: string, blobId: string, contentType: string, size: number, chunks: number) =>
    Effect.gen(function*() {
      const previous = yield* run(sql`SELECT blob_id, content_type, size::float8 AS size, chunks FROM blobs WHERE key = ${key}`)
        .pipe(Effect.flatMap(decodeBlob), orStorageError("blobs (read key)"))
      yield* run(sql`INSERT INTO blobs (key, blob_id, content_type, size, chunks)
          VALUES (${key}, ${blobId}, ${contentType}, ${size}, ${chunks})
          ON CONFLICT (key) DO UPDATE SET blob_id = EXCLUDED.blob_id, content_type = EXCLUDED.content_type,
            size = EXCLUDED.size, chunks = EXCLUDED.chunks, created_at = now()`).pipe(orStorageError("blobs (write key)"))
      if (Option.isSome(previous)) {
        yield* run(sql`DELETE FROM blob_chunks WHERE blob_id = ${previous.value.blob_id}`).pipe(
          orStorageError("blobs (drop previous chunks)")
        )
      }
    })

  /** Removes the chunks of a put that failed (inside a failed transaction the rollback already did). */
  const discardChunks = (blobId: string) =>
    run(sql`DELETE FROM blob_chunks WHERE blob_id = ${blobId}`).pipe(
      Effect.catchCause((cause) => Effect.logWarning("WES blobs: could not remove the chunks of a failed put", cause))
    )

  /** Chunk `n` of a blob, or only the bytes of it that `slice` names. */
  const readChunk = (blobId: string, n: number, slice?: ChunkSlice) =>
    run(slice === undefined || slice.whole
      ? sql`SELECT data FROM blob_chunks WHERE blob_id = ${blobId} AND n = ${n}`
      : sql`SELECT substring(data FROM ${slice.from + 1} FOR ${slice.length}) AS data FROM blob_chunks WHERE blob_id = ${blobId} AND n = ${n}`).pipe(
      Effect.flatMap(decodeChunk),
      orStorageError("blobs.get (chunk)"),
      Effect.flatMap(Option.match({
        onNone: () =>
          Effect.fail(new StorageError({ message: "PostgreSQL store: the blob was replaced or deleted while it was read" })),
        onSome: (row): Effect.Effect<Uint8Array> => Effect.succeed(row.data)
      }))
    )

  /** The chunks of a blob, or those `range` covers (and of its first and last chunk only its bytes). */
  const chunkStream = (blobId: string, chunks: number, range: BlobRange | undefined) => {
    const { first, last } = range === undefined ? { first: 0, last: chunks - 1 } : chunksOf(range, BLOB_CHUNK_SIZE)
    return Stream.unfold(first, (n) =>
      n > last
        ? Effect.undefined
        : Effect.map(
          readChunk(blobId, n, range === undefined ? undefined : chunkSlice(range, BLOB_CHUNK_SIZE, n)),
          (data) => [data, n + 1] as const
        ))
  }

  return BlobStore.of({
    put: (key, content, contentType) => {
      if (!isSafeBlobKey(key)) return Effect.fail(invalidKey(key))
      const blobId = globalThis.crypto.randomUUID()
      return Effect.gen(function*() {
        const written = yield* writeChunks(blobId, content)
        let chunks = written.chunks
        if (written.held !== undefined) {
          if (yield* putSmall(key, blobId, contentType, written.held)) return written.size
          // The key exists: replace it like a large blob.
          if (written.held.length > 0) {
            yield* insertChunk(blobId, 0, written.held)
            chunks = 1
          }
        }
        yield* transaction(sql, "blobs.put")(Effect.andThen(lockKey(key), switchKey(key, blobId, contentType, written.size, chunks)))
        return written.size
      }).pipe(Effect.onError(() => discardChunks(blobId)))
    },
    get: (key, options) =>
      isSafeBlobKey(key)
        ? run(sql`SELECT blob_id, content_type, size::float8 AS size, chunks FROM blobs WHERE key = ${key}`).pipe(
          Effect.flatMap(decodeBlob),
          orStorageError("blobs.get"),
          Effect.map(Option.map(({ blob_id, chunks, content_type, size }): Blob => ({
            size,
            content_type,
            stream: chunkStream(blob_id, chunks, options?.range)
          })))
        )
        : Effect.succeedNone,
    copy: (from, to) => {
      if (!isSafeBlobKey(to)) return Effect.fail(invalidKey(to))
      if (!isSafeBlobKey(from)) return Effect.succeed(false)
      const blobId = globalThis.crypto.randomUUID()
      return transaction(sql, "blobs.copy")(Effect.gen(function*() {
        // Both keys' locks, in a fixed order so two opposite copies cannot deadlock.
        for (const key of [...new Set([from, to])].sort()) yield* lockKey(key)
        const source = yield* run(sql`SELECT blob_id, content_type, size::float8 AS size, chunks FROM blobs WHERE key = ${from}`)
          .pipe(Effect.flatMap(decodeBlob), orStorageError("blobs.copy (read)"))
        if (Option.isNone(source)) return false
        const { chunks, content_type, size } = source.value
        yield* run(sql`INSERT INTO blob_chunks (blob_id, n, data)
            SELECT ${blobId}, n, data FROM blob_chunks WHERE blob_id = ${source.value.blob_id}`).pipe(
          orStorageError("blobs.copy (chunks)")
        )
        yield* switchKey(to, blobId, content_type, size, chunks)
        return true
      }))
    },
    delete: (key) =>
      isSafeBlobKey(key)
        ? transaction(sql, "blobs.delete")(Effect.gen(function*() {
          yield* lockKey(key)
          yield* run(sql`WITH gone AS (DELETE FROM blobs WHERE key = ${key} RETURNING blob_id)
              DELETE FROM blob_chunks WHERE blob_id IN (SELECT blob_id FROM gone)`).pipe(orStorageError("blobs.delete"))
        }))
        : Effect.void,
    deletePrefix: (prefix) =>
      isSafeBlobPrefix(prefix)
        ? run(deletePrefixStatement(sql, prefix)).pipe(
          Effect.flatMap(decodeDeleted),
          Effect.map(Option.getOrElse(() => ({ blobs: 0, bytes: 0 }))),
          orStorageError("blobs.deletePrefix")
        )
        : Effect.fail(invalidKey(prefix)),
    signedUrl: () => Effect.succeedNone
  })
})

/**
 * Deletes chunks no key points at that are older than `minAgeSeconds` (left by puts whose
 * process died mid-way); returns how many were deleted. Run it now and then, e.g. daily.
 */
export const sweepOrphanChunks = (minAgeSeconds = 24 * 60 * 60): Effect.Effect<number, StorageError, SqlClient.SqlClient> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* run(sql`WITH swept AS (
          DELETE FROM blob_chunks c
          WHERE c.created_at < now() - make_interval(secs => ${minAgeSeconds})
            AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.blob_id = c.blob_id)
          RETURNING 1)
        SELECT count(*)::int AS n FROM swept`).pipe(Effect.flatMap(readCount), orStorageError("blobs.sweepOrphanChunks"))
  })

/** `BlobStore` in the database, on the `SqlClient` in context. */
export const PgBlobStore: Layer.Layer<BlobStore, never, SqlClient.SqlClient> = Layer.effect(BlobStore, makePgBlobStore)
