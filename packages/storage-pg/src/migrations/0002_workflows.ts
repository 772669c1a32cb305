/**
 * Workflows. `claimed_by` and `lease_expires_at` are reserved for the multi-instance dispatcher
 * (claims with FOR UPDATE SKIP LOCKED and a lease). The partial indexes cover only unfinished
 * workflows, so they stay small however long the history grows.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE workflows (
    id uuid PRIMARY KEY,
    user_id uuid NOT NULL,
    name text NOT NULL,
    status text NOT NULL,
    tags text[] NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    started_at timestamptz,
    completed_at timestamptz,
    user_runner_id uuid,
    managed_runner_id uuid,
    workflow_json jsonb NOT NULL,
    workflow_params jsonb NOT NULL DEFAULT '[]',
    prompt_id text,
    queue_number integer,
    error_node text,
    exception_type text,
    exception_message text,
    idempotency_key text,
    dispatch_attempts integer NOT NULL DEFAULT 0,
    submitted_at timestamptz,
    claimed_by text,
    lease_expires_at timestamptz
  )`
  // list (newest first) and countCreatedSince
  yield* sql`CREATE INDEX workflows_user_created_idx ON workflows (user_id, created_at DESC, id DESC)`
  // list filtered by status
  yield* sql`CREATE INDEX workflows_user_status_created_idx ON workflows (user_id, status, created_at DESC, id DESC)`
  // runner history
  yield* sql`CREATE INDEX workflows_user_runner_history_idx ON workflows (user_id, user_runner_id, created_at DESC, id DESC)
    WHERE user_runner_id IS NOT NULL`
  yield* sql`CREATE INDEX workflows_managed_runner_history_idx ON workflows (user_id, managed_runner_id, created_at DESC, id DESC)
    WHERE managed_runner_id IS NOT NULL`
  // countActive (the active-workflows limit)
  yield* sql`CREATE INDEX workflows_active_user_idx ON workflows (user_id)
    WHERE status IN ('accepted', 'uploaded', 'queued', 'running')`
  // countInFlight (scheduling by least work in flight)
  yield* sql`CREATE INDEX workflows_in_flight_user_runner_idx ON workflows (user_runner_id)
    WHERE status IN ('accepted', 'uploaded', 'queued', 'running') AND user_runner_id IS NOT NULL`
  yield* sql`CREATE INDEX workflows_in_flight_managed_runner_idx ON workflows (managed_runner_id)
    WHERE status IN ('accepted', 'uploaded', 'queued', 'running') AND managed_runner_id IS NOT NULL`
  // listByStatus and the dispatcher's claim: unfinished ones, oldest first
  yield* sql`CREATE INDEX workflows_unfinished_created_idx ON workflows (created_at, id)
    WHERE status IN ('accepted', 'uploaded', 'queued', 'running')`
  // Idempotency-Key: one live key per user (a stale key is set to NULL before it is reused)
  yield* sql`CREATE UNIQUE INDEX workflows_user_idempotency_key ON workflows (user_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL`
})
