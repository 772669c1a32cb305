/**
 * `models` (issue 34): the model files a workflow or template declares, placed on an agent runner
 * before the prompt is posted; `[]` when none. A constant default only changes the catalog: no
 * rewrite of either table.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflows ADD COLUMN models jsonb NOT NULL DEFAULT '[]'`
  yield* sql`ALTER TABLE templates ADD COLUMN models jsonb NOT NULL DEFAULT '[]'`
})
