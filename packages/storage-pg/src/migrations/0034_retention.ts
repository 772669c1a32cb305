/**
 * Retention (issue 33). `workflow_outputs.expired_at`: when the sweeper deleted the output's file
 * (the row stays; a download answers 410). On `workflows`: `files_expired_at` (its files swept),
 * the sweeper's claim (`retention_claimed_by`, `retention_lease_expires_at`: several instances
 * share the due workflows, an instance that died leaves its batch to the next after the lease)
 * and `events_pruned_at` (its events deleted). Nullable without defaults: only the catalog
 * changes. The partial indexes hold only finished workflows not swept (not pruned) yet, so a
 * sweep reads the due ones oldest end first without scanning the history; the deliveries' one
 * holds only those that ended.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE workflow_outputs ADD COLUMN expired_at timestamptz`
  yield* sql`ALTER TABLE workflows
    ADD COLUMN files_expired_at timestamptz,
    ADD COLUMN retention_claimed_by text,
    ADD COLUMN retention_lease_expires_at timestamptz,
    ADD COLUMN events_pruned_at timestamptz`
  yield* sql`CREATE INDEX workflows_retention_due_idx ON workflows (completed_at)
    WHERE completed_at IS NOT NULL AND files_expired_at IS NULL`
  yield* sql`CREATE INDEX workflows_events_kept_idx ON workflows (completed_at)
    WHERE completed_at IS NOT NULL AND events_pruned_at IS NULL`
  yield* sql`CREATE INDEX webhook_deliveries_ended_idx ON webhook_deliveries ((coalesce(delivered_at, expires_at)))
    WHERE status <> 'pending'`
})
