/** Operator-managed runners (a small table: one index for the newest-first list). */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE managed_runners (
    id uuid PRIMARY KEY,
    name text NOT NULL,
    runner_type text NOT NULL,
    status text NOT NULL,
    endpoint text NOT NULL,
    headers jsonb NOT NULL DEFAULT '{}',
    tags text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
  )`
  yield* sql`CREATE INDEX managed_runners_created_idx ON managed_runners (created_at DESC, id DESC)`
})
