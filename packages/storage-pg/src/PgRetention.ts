/**
 * Core's `RetentionRepository` in PostgreSQL (migration 0034). Due workflows are claimed like
 * workflows and deliveries: one statement locks them with `FOR UPDATE SKIP LOCKED` and stamps a
 * lease, so instances sharing the database take disjoint batches and one that dies leaves its
 * batch to the others once the lease ends. Marking is guarded (`files_expired_at IS NULL`), so a
 * workflow swept twice after a lapsed lease is counted once. Each operation is one statement.
 */
import { type DueWorkflow, RetentionRepository, type RetentionCutoffs, terminalStatuses, Tier } from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { DbTimestamp, decodeRows, orStorageError, run, toDate } from "./Sql.js"

const DueRow = Schema.Struct({ id: Schema.String, tier: Tier, completed_at: DbTimestamp })
const Counts = Schema.Struct({ workflows: Schema.Int, outputs: Schema.Int, output_bytes: Schema.Number })
const Pruned = Schema.Struct({ workflows: Schema.Int, events: Schema.Int })
const Total = Schema.Struct({ n: Schema.Number })

const first = <A>(rows: ReadonlyArray<A>): A => rows[0]!

/** The statements that read the workflows table (their plans are checked on a large table: indexes.test.ts). */
export const retentionQueries = (sql: SqlClient.SqlClient) => {
  const ended = sql.literal(`(${terminalStatuses.map((s) => `'${s}'`).join(", ")})`)
  return {
    claimDue: (cutoffs: RetentionCutoffs, owner: string, now: DateTime.Utc, leaseUntil: DateTime.Utc, limit: number) => {
      const latest = [cutoffs.free, cutoffs.pro, cutoffs.plus].reduce((a, b) => (DateTime.isGreaterThan(a, b) ? a : b))
      return sql`WITH due AS (
          SELECT w.id, coalesce(u.tier, 'free') AS tier FROM workflows w LEFT JOIN users u ON u.id = w.user_id
          WHERE w.completed_at IS NOT NULL AND w.files_expired_at IS NULL AND w.status IN ${ended}
            AND w.completed_at <= ${toDate(latest)}
            AND w.completed_at <= CASE coalesce(u.tier, 'free') WHEN 'pro' THEN ${toDate(cutoffs.pro)}::timestamptz
              WHEN 'plus' THEN ${toDate(cutoffs.plus)}::timestamptz ELSE ${toDate(cutoffs.free)}::timestamptz END
            AND (w.retention_lease_expires_at IS NULL OR w.retention_lease_expires_at < ${toDate(now)})
          ORDER BY w.completed_at
          LIMIT ${limit}
          FOR UPDATE OF w SKIP LOCKED
        )
        UPDATE workflows w SET retention_claimed_by = ${owner}, retention_lease_expires_at = ${toDate(leaseUntil)}
        FROM due WHERE w.id = due.id
        RETURNING w.id::text AS id, due.tier, w.completed_at`
    },
    pruneEvents: (before: DateTime.Utc, limit: number) =>
      sql`WITH picked AS (
          SELECT id FROM workflows WHERE completed_at IS NOT NULL AND events_pruned_at IS NULL AND completed_at <= ${toDate(before)}
          ORDER BY completed_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ), marked AS (
          UPDATE workflows w SET events_pruned_at = statement_timestamp() FROM picked WHERE w.id = picked.id RETURNING w.id
        ), deleted AS (
          DELETE FROM workflow_events e USING marked m WHERE e.workflow_id = m.id RETURNING 1
        )
        SELECT (SELECT count(*) FROM marked)::int AS workflows, (SELECT count(*) FROM deleted)::int AS events`
  }
}

export const makePgRetention = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const q = retentionQueries(sql)
  const decodeDue = decodeRows(DueRow)
  return RetentionRepository.of({
    claimDue: (cutoffs, owner, now, leaseUntil, limit) =>
      run(q.claimDue(cutoffs, owner, now, leaseUntil, limit)).pipe(
        Effect.flatMap(decodeDue),
        Effect.map((rows): ReadonlyArray<DueWorkflow> => [...rows].sort((a, b) => DateTime.toEpochMillis(a.completed_at) - DateTime.toEpochMillis(b.completed_at))),
        orStorageError("retention.claimDue")
      ),
    markExpired: (expired) =>
      expired.length === 0
        ? Effect.succeed({ workflows: 0, outputs: 0, output_bytes: 0 })
        : run(sql`WITH x AS (
            SELECT * FROM jsonb_to_recordset(${JSON.stringify(expired.map((e) => ({ id: e.id, expired_at: DateTime.formatIso(e.expired_at) })))}::jsonb)
              AS x(id uuid, expired_at timestamptz)
          ), marked AS (
            UPDATE workflows w SET files_expired_at = x.expired_at, retention_claimed_by = NULL, retention_lease_expires_at = NULL
            FROM x WHERE w.id = x.id AND w.files_expired_at IS NULL
            RETURNING w.id, x.expired_at
          ), outs AS (
            UPDATE workflow_outputs o SET expired_at = m.expired_at FROM marked m WHERE o.workflow_id = m.id RETURNING o.size
          )
          SELECT (SELECT count(*) FROM marked)::int AS workflows, (SELECT count(*) FROM outs)::int AS outputs,
            (SELECT coalesce(sum(size), 0) FROM outs)::float8 AS output_bytes`).pipe(
          Effect.flatMap(decodeRows(Counts)),
          Effect.map(first),
          orStorageError("retention.markExpired")
        ),
    pruneEvents: (before, limit) =>
      run(q.pruneEvents(before, limit)).pipe(
        Effect.flatMap(decodeRows(Pruned)),
        Effect.map(first),
        orStorageError("retention.pruneEvents")
      ),
    pruneDeliveries: (before, limit) =>
      run(sql`WITH old AS (
          SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND coalesce(delivered_at, expires_at) <= ${toDate(before)}
          LIMIT ${limit} FOR UPDATE SKIP LOCKED
        ), deleted AS (
          DELETE FROM webhook_deliveries d USING old WHERE d.id = old.id RETURNING 1
        )
        SELECT count(*)::float8 AS n FROM deleted`).pipe(
        Effect.flatMap(decodeRows(Total)),
        Effect.map((rows) => first(rows).n),
        orStorageError("retention.pruneDeliveries")
      ),
    storedBytes: run(sql`SELECT coalesce(sum(size), 0)::float8 AS n FROM workflow_outputs WHERE expired_at IS NULL`).pipe(
      Effect.flatMap(decodeRows(Total)),
      Effect.map((rows) => first(rows).n),
      orStorageError("retention.storedBytes")
    )
  })
})

export const PgRetention: Layer.Layer<RetentionRepository, never, SqlClient.SqlClient> = Layer.effect(RetentionRepository, makePgRetention)
