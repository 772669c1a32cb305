/**
 * Ranges: of a blob's chunks, and of keys. Which chunks of a chunked blob a byte range covers. Every chunk of a blob holds
 * BLOB_CHUNK_SIZE bytes but the last, so chunk `n` starts at byte `n * chunkSize`: a range
 * reads only the chunks it touches, and of its first and last chunk only the bytes it needs
 * (`substring` on an uncompressed out-of-line `bytea` reads only the TOAST slices it covers).
 */
import type * as SqlClient from "effect/sql/SqlClient"
import type { BlobRange } from "@wes/core"

/** Bytes `from` (0-based) to `from + length` of chunk `n`; `whole` when that is the whole chunk. */
export interface ChunkSlice {
  readonly n: number
  readonly from: number
  readonly length: number
  readonly whole: boolean
}

/** The slice of chunk `n` that `range` needs (call for the chunks from `firstChunk` to `lastChunk`). */
export const chunkSlice = (range: BlobRange, chunkSize: number, n: number): ChunkSlice => {
  const chunkStart = n * chunkSize
  const from = Math.max(range.start - chunkStart, 0)
  const to = Math.min(range.end - chunkStart, chunkSize - 1)
  return { n, from, length: to - from + 1, whole: from === 0 && to === chunkSize - 1 }
}

/** The chunks `range` touches, first and last included; none (first > last) for an empty range. */
export const chunksOf = (range: BlobRange, chunkSize: number) => ({
  first: Math.floor(range.start / chunkSize),
  last: range.end < range.start ? -1 : Math.floor(range.end / chunkSize)
})

/** The exclusive upper bound, in byte order, of the keys starting with `prefix` (which ends in `/`). */
const prefixUpperBound = (prefix: string): string => `${prefix.slice(0, -1)}0`

/**
 * Deletes the blobs whose keys start with `prefix` (a safe key and `/`) and their chunks: the keys
 * from the prefix up to its last `/` plus one, in byte order, a range scan of `blobs_key_bytes`.
 */
export const deletePrefixStatement = (sql: SqlClient.SqlClient, prefix: string) =>
  sql`WITH gone AS (
      DELETE FROM blobs WHERE key COLLATE "C" >= ${prefix} AND key COLLATE "C" < ${prefixUpperBound(prefix)}
      RETURNING blob_id, size
    ), chunks AS (DELETE FROM blob_chunks WHERE blob_id IN (SELECT blob_id FROM gone))
    SELECT count(*)::int AS blobs, coalesce(sum(size), 0)::float8 AS bytes FROM gone`
