/**
 * What each runner's `/object_info` offered when last read (core's capability summary), one row
 * per runner of either kind. Apart from `runners` and `managed_runners`, so that no write of a
 * workflow touches it; no foreign key (two parent tables): the runner services delete the row
 * with the runner, and `due` only ever joins from the runners.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE runner_capabilities (
    runner_id uuid PRIMARY KEY,
    runner_kind text NOT NULL CHECK (runner_kind IN ('user', 'managed')),
    summary jsonb NOT NULL,
    hash text NOT NULL,
    read_at timestamptz NOT NULL
  )`
})
