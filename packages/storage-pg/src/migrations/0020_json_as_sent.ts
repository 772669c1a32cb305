/**
 * Workflow definitions and template bodies as sent: `json` keeps the text (and so the order of
 * keys), where `jsonb` reorders them (shorter keys first). Nothing queries inside either column.
 * Rows written before keep the order `jsonb` gave them.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflows ALTER COLUMN workflow_json TYPE json USING workflow_json::json`
  yield* sql`ALTER TABLE templates ALTER COLUMN body TYPE json USING body::json`
})
