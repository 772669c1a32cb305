/**
 * Where each runner's agent is connected (issue 34, `AgentPresence`): the instance holding the
 * agent's WebSocket (`owner`) until `expires_at` (a lease renewed while connected; '-infinity'
 * once released), and the latest status the agent reported with when. One row per agent runner
 * that ever connected; direct runners have none.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE agent_presence (
    runner_id text PRIMARY KEY,
    owner text NOT NULL,
    expires_at timestamptz NOT NULL,
    status jsonb,
    reported_at timestamptz
  )`
})
