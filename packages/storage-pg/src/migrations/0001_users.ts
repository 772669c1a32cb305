/** Users and their API tokens (SHA-256 hashes only, looked up by hash). */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE users (
    id uuid PRIMARY KEY,
    email text,
    tier text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
  )`
  yield* sql`CREATE TABLE api_tokens (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name text NOT NULL,
    token_hash text NOT NULL,
    expires_at timestamptz,
    last_used_at timestamptz,
    created_at timestamptz NOT NULL
  )`
  yield* sql`CREATE UNIQUE INDEX api_tokens_token_hash_key ON api_tokens (token_hash)`
  yield* sql`CREATE INDEX api_tokens_user_created_idx ON api_tokens (user_id, created_at DESC, id DESC)`
})
