/** Files produced by workflows; `position` keeps the order they were added in. */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE workflow_outputs (
    id uuid PRIMARY KEY,
    position bigint GENERATED ALWAYS AS IDENTITY,
    workflow_id uuid NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    node_id text NOT NULL,
    filename text NOT NULL,
    subfolder text NOT NULL,
    type text NOT NULL,
    content_type text NOT NULL,
    size bigint NOT NULL,
    blob_key text NOT NULL,
    created_at timestamptz NOT NULL
  )`
  yield* sql`CREATE INDEX workflow_outputs_workflow_idx ON workflow_outputs (workflow_id, position)`
})
