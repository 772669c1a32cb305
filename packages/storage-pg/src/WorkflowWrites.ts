/**
 * The writes of a workflow's life, each one statement: `create` (the row, its first event, its
 * user's quota and the NOTIFYs) and `transitions` (a batch of guarded moves with their events,
 * outputs, quota and NOTIFYs). Plans come from core's `planTransition`; this file only says them
 * in SQL. The quota row makes the tier limits one guarded upsert: PostgreSQL re-checks its guard
 * on the latest row version after waiting for a concurrent writer, so counts cannot overshoot
 * without a lock or a second statement.
 */
import {
  activeStatuses,
  hookedStatuses,
  outputData,
  type PlannedFields,
  terminalStatuses,
  type TransitionPlan,
  type TransitionRequest,
  type Workflow,
  withCarried
} from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Schema from "effect/Schema"
import type * as SqlClient from "effect/sql/SqlClient"
import { AttemptsJson, iso, summaryJson, WorkflowInsert, workflowHeads } from "./WorkflowRows.js"

/** The SQL type of each field a plan may set (a `satisfies` keeps it in step with core). */
const PATCH_COLUMNS = {
  updated_at: "timestamptz",
  started_at: "timestamptz",
  completed_at: "timestamptz",
  prompt_id: "text",
  queue_number: "integer",
  error_node: "text",
  exception_type: "text",
  exception_message: "text",
  user_runner_id: "uuid",
  managed_runner_id: "uuid",
  submitted_at: "timestamptz",
  attempts: "jsonb",
  transfer_ms: "integer"
} as const satisfies Record<keyof PlannedFields, string>

const patchColumns = Object.keys(PATCH_COLUMNS) as Array<keyof typeof PATCH_COLUMNS>
const list = (values: ReadonlyArray<string>) => `(${values.map((v) => `'${v}'`).join(", ")})`
const UNFINISHED = list(activeStatuses)
const TERMINAL = list(terminalStatuses)
const HOOKED = list(hookedStatuses)

/** Channels of the NOTIFYs a write sends. */
export interface Channels {
  readonly events: string
  readonly work: string
  /** New webhook deliveries (default `wes_webhooks`). */
  readonly webhooks?: string | undefined
}

export const DEFAULT_WEBHOOKS_CHANNEL = "wes_webhooks"

/** Bounds a create checks (absent: none). */
export interface CreateLimits {
  readonly maxActive: number
  readonly maxPerDay: number
  readonly dayStart: DateTime.Utc
}

const encodeWorkflow = Schema.encodeSync(WorkflowInsert)
const encodeAttempts = Schema.encodeSync(AttemptsJson)
/**
 * The definition goes in as its own `json` parameter (the column keeps the text, keys in the
 * order sent); every other column comes from the row's JSON.
 */
const INSERT_COLUMNS = workflowHeads.list()
const SELECT_COLUMNS = workflowHeads.list("r")
const NO_LIMIT = 2_147_483_647

/**
 * One statement: count the create against the user's quota (guarded), insert the row and its
 * first `status` event, and NOTIFY its runner's dispatcher and the event subscribers. No row
 * comes back when a limit refused it.
 */
export const createStatement = (sql: SqlClient.SqlClient, channels: Channels, w: Workflow, limits: CreateLimits | undefined) => {
  const dayStart = DateTime.toDateUtc(limits?.dayStart ?? DateTime.makeUnsafe(0))
  const maxActive = limits?.maxActive ?? NO_LIMIT
  const maxPerDay = limits?.maxPerDay ?? NO_LIMIT
  const activeInc = activeStatuses.includes(w.status) ? 1 : 0
  const runner = w.user_runner_id ?? w.managed_runner_id
  return sql<{ id: string }>`WITH quota AS (
      INSERT INTO workflow_quotas AS q (user_id, active, day_start, created_on_day)
      SELECT ${w.user_id}::uuid, ${activeInc}::int, ${dayStart}::timestamptz, 1 WHERE 1 <= ${maxActive}::int AND 1 <= ${maxPerDay}::int
      ON CONFLICT (user_id) DO UPDATE SET
        active = q.active + EXCLUDED.active,
        created_on_day = CASE WHEN EXCLUDED.day_start > q.day_start THEN 1 ELSE q.created_on_day + 1 END,
        day_start = greatest(q.day_start, EXCLUDED.day_start)
      WHERE q.active + 1 <= ${maxActive}::int
        AND (EXCLUDED.day_start > q.day_start OR q.created_on_day + 1 <= ${maxPerDay}::int)
      RETURNING 1
    ), inserted AS (
      INSERT INTO workflows (${sql.literal(INSERT_COLUMNS)}, workflow_json)
      SELECT ${sql.literal(SELECT_COLUMNS)}, ${JSON.stringify(w.workflow_json)}::json
      FROM quota, jsonb_populate_record(NULL::workflows, ${JSON.stringify(encodeWorkflow(w))}::jsonb) AS r
      RETURNING *
    ), head AS (
      INSERT INTO workflow_event_heads (workflow_id, last_seq) SELECT id, 1 FROM inserted
    ), logged AS (
      INSERT INTO workflow_events (workflow_id, seq, type, data, created_at)
      SELECT i.id, 1, 'status', ${sql.literal(summaryJson("i"))}, i.created_at FROM inserted i
    )
    SELECT i.id, pg_notify(${channels.work}, ${runner ?? ""}), pg_notify(${channels.events}, i.id::text) FROM inserted i`
}

/** A request as the transition statement reads it (one element of its JSON parameter). */
const requestRow = (request: TransitionRequest, plan: TransitionPlan, events: ReadonlyArray<unknown>) => {
  const row: Record<string, unknown> = {
    id: request.id,
    owner: request.owner ?? null,
    from_statuses: plan.from,
    status: plan.status ?? null,
    set_keys: Object.keys(plan.set),
    bump: plan.bumpAttempts,
    release: plan.releaseClaim,
    events
  }
  for (const column of patchColumns) {
    const value = plan.set[column]
    row[column] = value === undefined || value === null
      ? null
      : DateTime.isDateTime(value)
      ? DateTime.formatIso(value)
      : column === "attempts"
      ? encodeAttempts(plan.set.attempts ?? [])
      : value
  }
  return row
}

/**
 * The events of a plan as the statement builds them (given data, or the summary with an
 * override), with the request's run events and outputs placed as core places them (`withCarried`).
 */
const eventRows = (request: TransitionRequest, plan: TransitionPlan) => {
  const planned = plan.events.map((e) =>
    e.type === "queue" || e.type === "retry"
      ? { type: e.type, data: e.data }
      : {
        type: e.type,
        override: Object.fromEntries(Object.entries(e.override).map(([k, v]) => [k, DateTime.isDateTime(v) ? DateTime.formatIso(v) : v]))
      }
  )
  return withCarried<{ type: string; data?: unknown; override?: unknown }>(plan, planned, [
    ...(request.events ?? []).map((e) => ({ type: e.type, data: e.data ?? null })),
    ...(request.outputs ?? []).map((o) => ({ type: "output", data: outputData(o) }))
  ])
}

const recordset = `jsonb_to_recordset($1::jsonb) AS r(id uuid, owner uuid, from_statuses text[], status text, set_keys text[],
  bump boolean, release boolean, events jsonb, ${patchColumns.map((c) => `${c} ${PATCH_COLUMNS[c]}`).join(", ")})`

const assignments = [
  "status = coalesce(r.status, w.status)",
  ...patchColumns.map((c) => `${c} = CASE WHEN '${c}' = ANY(r.set_keys) THEN r.${c} ELSE w.${c} END`),
  "dispatch_attempts = w.dispatch_attempts + CASE WHEN r.bump THEN 1 ELSE 0 END",
  "claimed_by = CASE WHEN r.release THEN NULL ELSE w.claimed_by END",
  "lease_expires_at = CASE WHEN r.release THEN NULL ELSE w.lease_expires_at END"
].join(",\n    ")

/**
 * One statement for a batch of moves of distinct workflows: each guarded update, then for the
 * rows it changed their events (numbered from each workflow's head), outputs, the webhook
 * deliveries of their status events (the outbox: only for a workflow with a URL, its own or its
 * owner's), the quota of the users whose workflows ended, and the NOTIFYs (events; the new runner
 * of a moved workflow; new webhook deliveries, once per statement).
 * Returns the changed rows (without definitions); a request missing from the result was refused
 * or names no workflow (of its owner).
 */
export const transitionStatement = (
  sql: SqlClient.SqlClient,
  channels: Channels,
  batch: ReadonlyArray<{ readonly request: TransitionRequest; readonly plan: TransitionPlan }>
) => {
  const requests = batch.map(({ plan, request }) => requestRow(request, plan, eventRows(request, plan)))
  const outputs = batch.flatMap(({ request }) =>
    (request.outputs ?? []).map((o) => ({ ...o, created_at: DateTime.formatIso(o.created_at) }))
  ).map((o, ord) => ({ ...o, ord }))
  const statement = `WITH changed AS (
    UPDATE workflows w SET ${assignments}
    FROM ${recordset}
    WHERE w.id = r.id AND w.status = ANY(r.from_statuses) AND (r.owner IS NULL OR w.user_id = r.owner)
    RETURNING ${workflowHeads.list("w")}, ${summaryJson("w")} AS summary, r.events, r.release
  ), logged_events AS (
    SELECT c.id, e.ord, e.value->>'type' AS type,
      CASE WHEN e.value ? 'data' THEN e.value->'data' ELSE c.summary || (e.value->'override') END AS data
    FROM changed c, jsonb_array_elements(c.events) WITH ORDINALITY AS e(value, ord)
  ), counts AS (
    SELECT id, count(*)::int AS n FROM logged_events GROUP BY id
  ), heads AS (
    INSERT INTO workflow_event_heads AS h (workflow_id, last_seq) SELECT id, n FROM counts
    ON CONFLICT (workflow_id) DO UPDATE SET last_seq = h.last_seq + EXCLUDED.last_seq
    RETURNING workflow_id, last_seq
  ), logged AS (
    INSERT INTO workflow_events (workflow_id, seq, type, data, created_at)
    SELECT e.id, h.last_seq - n.n + e.ord::int, e.type, e.data, c.updated_at
    FROM logged_events e JOIN counts n ON n.id = e.id JOIN heads h ON h.workflow_id = e.id JOIN changed c ON c.id = e.id
  ), outputs AS (
    INSERT INTO workflow_outputs (id, workflow_id, node_id, filename, subfolder, type, content_type, size, blob_key, created_at)
    SELECT o.id, o.workflow_id, o.node_id, o.filename, o.subfolder, o.type, o.content_type, o.size, o.blob_key, o.created_at
    FROM jsonb_to_recordset($2::jsonb) AS o(id uuid, workflow_id uuid, node_id text, filename text, subfolder text,
      type text, content_type text, size bigint, blob_key text, created_at timestamptz, ord integer)
    JOIN changed c ON c.id = o.workflow_id
    ORDER BY o.ord
  ), hooks AS (
    INSERT INTO webhook_deliveries (id, workflow_id, user_id, url, type, payload, created_at, next_attempt_at, expires_at)
    SELECT gen_random_uuid(), c.id, c.user_id, coalesce(c.webhook_url, wh.url), 'workflow.' || (e.data->>'status'),
      jsonb_build_object('type', 'workflow.' || (e.data->>'status'), 'timestamp', ${iso("c.updated_at")}, 'data', e.data)::text,
      c.updated_at, c.updated_at, c.updated_at + interval '24 hours'
    FROM logged_events e JOIN changed c ON c.id = e.id LEFT JOIN webhook_endpoints wh ON wh.user_id = c.user_id
    WHERE e.type = 'status' AND e.data->>'status' IN ${HOOKED} AND coalesce(c.webhook_url, wh.url) IS NOT NULL
    ORDER BY e.id, e.ord
    RETURNING 1
  ), quota AS (
    UPDATE workflow_quotas q SET active = q.active - d.n
    FROM (SELECT user_id, count(*)::int AS n FROM changed WHERE status IN ${TERMINAL} GROUP BY user_id) d
    WHERE q.user_id = d.user_id
  )
  SELECT ${workflowHeads.list("c")},
    pg_notify($3, c.id::text),
    CASE WHEN c.release THEN pg_notify($4, coalesce(c.user_runner_id, c.managed_runner_id)::text) END,
    (SELECT pg_notify($5, '') FROM hooks LIMIT 1) AS hooked
  FROM changed c`
  return sql.unsafe<Record<string, unknown>>(statement, [
    JSON.stringify(requests),
    JSON.stringify(outputs),
    channels.events,
    channels.work,
    channels.webhooks ?? DEFAULT_WEBHOOKS_CHANNEL
  ])
}

/** Unfinished statuses, as the partial indexes' predicates spell them. */
export const UNFINISHED_SQL = UNFINISHED
