/**
 * Scheduling (issue 17): a workflow's priority (0 low, 1 normal, 2 high; existing rows are
 * normal), its earlier attempts (runs retried on another runner, a JSON array), and the claim's index of waiting work per runner, user and priority, oldest first.
 * The claim walks the distinct users waiting on a runner and, for each user and priority, takes
 * the oldest few unclaimed: each step is a short ordered scan of this index. It replaces the index
 * of waiting work by runner and age, which no statement reads any more.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflows ADD COLUMN priority smallint NOT NULL DEFAULT 1 CHECK (priority BETWEEN 0 AND 2)`
  yield* sql`ALTER TABLE workflows ADD COLUMN attempts jsonb NOT NULL DEFAULT '[]'`
  yield* sql`CREATE INDEX workflows_waiting_runner_user_idx
    ON workflows ((coalesce(user_runner_id, managed_runner_id)), user_id, priority, created_at, id)
    WHERE status IN ('accepted', 'uploaded')`
  yield* sql`DROP INDEX workflows_waiting_runner_idx`
})
