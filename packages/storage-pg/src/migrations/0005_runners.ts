/** User-owned runners. */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE runners (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL,
    name text NOT NULL,
    status text NOT NULL,
    endpoint text NOT NULL,
    tags text[] NOT NULL DEFAULT '{}',
    headers jsonb NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
  )`
  yield* sql`CREATE INDEX runners_user_created_idx ON runners (user_id, created_at DESC, id DESC)`
})
