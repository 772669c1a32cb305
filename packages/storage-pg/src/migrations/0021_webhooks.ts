/**
 * Webhooks (issue 16): a user's endpoint and signing secrets; a workflow's own URL; the outbox of
 * deliveries, written by the transition statement itself, with their lease (claimed like
 * workflows: `claimed_by`, `lease_expires_at`) and their log of attempts. `ord` keeps the order
 * of one workflow's deliveries to one URL. The due index is as small as the pending backlog.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflows ADD COLUMN webhook_url text`
  yield* sql`CREATE TABLE webhook_endpoints (
    user_id uuid PRIMARY KEY,
    url text NOT NULL,
    secret text NOT NULL,
    previous_secret text,
    previous_expires_at timestamptz,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
  )`
  yield* sql`CREATE TABLE webhook_deliveries (
    id uuid PRIMARY KEY,
    ord bigint GENERATED ALWAYS AS IDENTITY,
    workflow_id uuid NOT NULL,
    user_id uuid NOT NULL,
    url text NOT NULL,
    type text NOT NULL,
    payload text NOT NULL,
    status text NOT NULL DEFAULT 'pending',
    created_at timestamptz NOT NULL,
    next_attempt_at timestamptz,
    expires_at timestamptz NOT NULL,
    delivered_at timestamptz,
    attempts jsonb NOT NULL DEFAULT '[]',
    claimed_by text,
    lease_expires_at timestamptz
  )`
  yield* sql`CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at, ord) WHERE status = 'pending'`
  yield* sql`CREATE INDEX webhook_deliveries_workflow_idx ON webhook_deliveries (workflow_id, ord)`
})
