/**
 * `transfer_ms`: how long a completed workflow's outputs took to come from its runner into WES,
 * set by the completing transition (null before, and for every other end). Adding a nullable
 * column without a default only changes the catalog: no rewrite of the table.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflows ADD COLUMN transfer_ms integer`
})
