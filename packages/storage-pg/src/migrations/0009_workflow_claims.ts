/**
 * The dispatcher's reads per runner: its waiting workflows (the claim, `PgDispatchQueue`) and its
 * unfinished ones (`listUnfinishedOnRunner`), oldest first. A workflow's runner is
 * `coalesce(user_runner_id, managed_runner_id)` (at most one is set), so one index per purpose
 * serves both kinds of runner with an ordered scan that stops at the LIMIT; an `OR` of the two
 * columns made the planner walk every unfinished workflow instead. Partial, so they stay as
 * small as the backlog; their predicates must match `WAITING_STATUSES_SQL` and
 * `UNFINISHED_STATUSES_SQL`.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE INDEX workflows_waiting_runner_idx
    ON workflows ((coalesce(user_runner_id, managed_runner_id)), created_at, id)
    WHERE status IN ('accepted', 'uploaded')`
  yield* sql`CREATE INDEX workflows_unfinished_runner_idx
    ON workflows ((coalesce(user_runner_id, managed_runner_id)), created_at, id)
    WHERE status IN ('accepted', 'uploaded', 'queued', 'running')`
})
