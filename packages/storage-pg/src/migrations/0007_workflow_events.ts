/**
 * The per-workflow event log. `workflow_event_heads` holds each workflow's last sequence
 * number: publishing bumps it with one upsert, whose row lock makes concurrent publishers
 * take consecutive numbers. No foreign key: events may be logged for any workflow id.
 */
import * as SqlClient from "effect/sql/SqlClient"
import * as Effect from "effect/Effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE workflow_event_heads (
    workflow_id uuid PRIMARY KEY,
    last_seq integer NOT NULL
  )`
  yield* sql`CREATE TABLE workflow_events (
    workflow_id uuid NOT NULL,
    seq integer NOT NULL,
    type text NOT NULL,
    data jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (workflow_id, seq)
  )`
})
