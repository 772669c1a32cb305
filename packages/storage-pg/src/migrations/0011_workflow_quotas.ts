/**
 * Each user's count of unfinished workflows and of workflows created on the current UTC day, kept
 * by the statements that create and end workflows. A create checks the tier limits with one
 * guarded upsert of this row (PostgreSQL re-checks the guard on the newest version after waiting
 * for a concurrent writer), so it needs no lock and no count. Filled from `workflows` here.
 *
 * And the reconciliation's read of what may be on a runner (queued, running, or claimed for
 * submission), oldest first: an index as small as the work in flight, which the query's WHERE
 * clause spells exactly like the predicate. It replaces the index of every unfinished workflow
 * per runner, and the one of unfinished workflows by age (no statement reads either any more;
 * each index costs every transition a write).
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE workflow_quotas (
    user_id uuid PRIMARY KEY,
    active integer NOT NULL,
    day_start timestamptz NOT NULL,
    created_on_day integer NOT NULL
  )`
  yield* sql`INSERT INTO workflow_quotas (user_id, active, day_start, created_on_day)
    SELECT user_id,
      count(*) FILTER (WHERE status IN ('accepted', 'uploaded', 'queued', 'running'))::int,
      date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC',
      count(*) FILTER (WHERE created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')::int
    FROM workflows GROUP BY user_id`
  yield* sql`CREATE INDEX workflows_submitted_runner_idx
    ON workflows ((coalesce(user_runner_id, managed_runner_id)), created_at, id)
    WHERE status IN ('queued', 'running') OR (status IN ('accepted', 'uploaded') AND submitted_at IS NOT NULL)`
  yield* sql`DROP INDEX workflows_unfinished_runner_idx`
  yield* sql`DROP INDEX workflows_unfinished_created_idx`
})
