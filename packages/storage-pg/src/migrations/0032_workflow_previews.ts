/**
 * `workflow_previews`: the latest live preview of each running workflow (one row, upserted at
 * most twice a second by the dispatcher that drives it, deleted at its end), read by the
 * instances whose SSE subscribers follow it when a NOTIFY names it. UNLOGGED: a preview is worth
 * nothing after a crash, and its writes skip the WAL. No foreign key: the row goes with the run.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE UNLOGGED TABLE workflow_previews (
    workflow_id uuid PRIMARY KEY,
    node text,
    content_type text NOT NULL,
    image bytea NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
  )`
  // JPEG, PNG and WEBP are compressed already.
  yield* sql`ALTER TABLE workflow_previews ALTER COLUMN image SET STORAGE EXTERNAL`
})
