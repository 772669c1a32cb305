/**
 * Runner agents (issue 34). `runners.connection`: how WES reaches a user runner, `direct` (its
 * endpoint) or `agent` (through the `wes-agent` that dials out to WES); existing runners are
 * direct. `runner_agent_tokens`: the tokens agents present, SHA-256 hashes only, looked up by
 * hash; each goes with its runner (ON DELETE CASCADE). The per-runner index serves the list,
 * the count of live tokens and the pruning of revoked ones.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE runners ADD COLUMN connection text NOT NULL DEFAULT 'direct'`
  yield* sql`CREATE TABLE runner_agent_tokens (
    id uuid PRIMARY KEY,
    runner_id uuid NOT NULL REFERENCES runners (id) ON DELETE CASCADE,
    token_hash text NOT NULL,
    created_at timestamptz NOT NULL,
    last_used_at timestamptz,
    revoked_at timestamptz
  )`
  yield* sql`CREATE UNIQUE INDEX runner_agent_tokens_token_hash_key ON runner_agent_tokens (token_hash)`
  yield* sql`CREATE INDEX runner_agent_tokens_runner_created_idx ON runner_agent_tokens (runner_id, created_at DESC, id DESC)`
})
