/**
 * Blobs in the database, stored as numbered chunks so neither a write nor a read holds a whole
 * file in memory. `blobs` maps a key to the current `blob_id`; a put writes the chunks of a new
 * id first and then switches the key over in one short transaction.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE blob_chunks (
    blob_id uuid NOT NULL,
    n integer NOT NULL,
    data bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (blob_id, n)
  )`
  // Images and archives are compressed already: skip TOAST compression, keep out-of-line storage.
  yield* sql`ALTER TABLE blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL`
  yield* sql`CREATE TABLE blobs (
    key text PRIMARY KEY,
    blob_id uuid NOT NULL UNIQUE,
    content_type text NOT NULL,
    size bigint NOT NULL,
    chunks integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
  )`
})
