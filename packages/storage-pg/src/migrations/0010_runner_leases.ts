/**
 * Which instance drives which runner (`PgRunnerOwnership`). A row is taken over when it has
 * expired; `epoch` grows with every acquisition and names the runner's WebSocket client id, so a
 * new driver never reuses a client id. Rows are kept after release (expired) so that epochs
 * never start again from 1.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE runner_leases (
    runner_id text PRIMARY KEY,
    owner text NOT NULL,
    epoch bigint NOT NULL,
    expires_at timestamptz NOT NULL
  )`
})
