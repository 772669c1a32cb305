/**
 * An index on `blobs.key` in byte order (`COLLATE "C"`), so that `deletePrefix` (retention:
 * every blob of one workflow, `outputs/<workflow>/`) is a range scan whatever the database's
 * collation: the primary key's own order follows the database collation, where a key range is
 * not a prefix.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX blobs_key_bytes ON blobs (key COLLATE "C")`
})
