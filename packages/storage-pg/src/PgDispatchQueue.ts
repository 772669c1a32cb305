/**
 * Core's `DispatchQueue` on the `workflows` table, in the manner of graphile-worker and River:
 * the database does the coordination with one claim statement (`FOR UPDATE SKIP LOCKED`, so
 * concurrent claimers never wait for each other and never get the same row), a claim is a
 * lease (`claimed_by`, `lease_expires_at`) that its owner renews and that anyone may take over
 * once it has expired, and NOTIFY on `wes_work` is only a wake-up: a claimer that misses one
 * finds the work at its next poll.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { DispatchQueue, WAKE_ALL } from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { ListenChannel } from "./PgListener.js"
import { decodeRows, isId, orStorageError, run, spelledAsAsked, WAITING_STATUSES_SQL } from "./Sql.js"
import { WorkflowRow, workflows } from "./WorkflowRows.js"

/** A claimed row: the workflow, and whether an earlier claim had marked it as possibly posted. */
const ClaimedRow = Schema.Struct({ ...WorkflowRow.fields, resubmit: Schema.Boolean })

/** A row of `waitingOn`: a waiting workflow, or a user's count on the runner. */
const QueueRow = Schema.Struct({
  kind: Schema.Literals(["waiting", "load"]),
  id: Schema.NullOr(Schema.String),
  user_id: Schema.String,
  priority: Schema.NullOr(WorkflowRow.fields.priority),
  created_at: Schema.NullOr(WorkflowRow.fields.created_at),
  n: Schema.Number
})

/** The default NOTIFY channel of new work; every instance sharing a database must use the same. */
export const DEFAULT_WORK_CHANNEL = "wes_work"

/** Options of the dispatch queue's wake-ups. */
export interface PgDispatchQueueOptions {
  /** The NOTIFY channel of new work (default `wes_work`). */
  readonly channel?: string | undefined
  /** Wake-ups kept for a slow consumer before the oldest are dropped (default 1024; they may coalesce). */
  readonly wakeupBuffer?: number | undefined
}

/**
 * The SQL of the queue, as statements: the queue runs them, the index tests EXPLAIN them.
 * Ids must have passed `isId`.
 */
export const dispatchQueries = (sql: SqlClient.SqlClient) => {
  const every = sql.literal(workflows.list())
  const claimedColumns = sql.literal(workflows.list("w"))
  const waiting = sql.literal(WAITING_STATUSES_SQL)
  const leaseEnd = (leaseMs: number) => sql`now() + ${Math.max(0, Math.round(leaseMs))}::float8 * interval '1 millisecond'`
  /**
   * Each user's work on the runner: queued, running, or claimed with a live lease (claimed rows
   * are marked `submitted_at`, so the predicate of `workflows_submitted_runner_idx` covers them).
   */
  const loadOn = (runnerId: string) =>
    sql`SELECT user_id, count(*)::int AS n FROM workflows
      WHERE coalesce(user_runner_id, managed_runner_id) = ${runnerId}
        AND (status IN ('queued', 'running') OR (status IN ('accepted', 'uploaded') AND submitted_at IS NOT NULL))
        AND (status IN ('queued', 'running') OR lease_expires_at >= now())
      GROUP BY user_id`
  return {
    /**
     * One statement, core's `orderWaiting` in SQL. `users` walks the distinct users waiting on the
     * runner (a skip scan of the waiting index); `candidates` takes, per user and priority, the
     * `limit` oldest unclaimed (within a priority an older workflow of a user never ranks below a
     * newer one, so the first `limit` of the whole order are among them); `load` counts each
     * user's work on the runner (queued, running, or claimed with a live lease); `ranked` numbers
     * each user's candidates by effective priority then age and adds that load (the turn). Then
     * the first `limit` by effective priority, turn and age are locked, stamped with the lease and
     * marked as possibly posted (`submitted_at`, kept when already set); returned in that order,
     * each with whether it had been marked before. Rows another claimer holds locked are skipped,
     * not replaced by the next in order: two claimers of one runner at once (only at a change of
     * the runner's driver) may claim fewer than `limit` this time, never the same workflow.
     */
    claim: (runnerId: string, owner: string, limit: number, leaseMs: number, agingMs: number) => {
      const unclaimed = sql.literal("(claimed_by IS NULL OR lease_expires_at < now())")
      const oldestAt = (level: number) =>
        sql`(SELECT id, user_id, priority, created_at FROM workflows
            WHERE coalesce(user_runner_id, managed_runner_id) = ${runnerId} AND user_id = u.user_id
              AND priority = ${level} AND status IN ${waiting} AND ${unclaimed}
            ORDER BY created_at, id LIMIT ${limit})`
      return sql`WITH RECURSIVE users AS (
          (SELECT user_id FROM workflows
            WHERE coalesce(user_runner_id, managed_runner_id) = ${runnerId} AND status IN ${waiting}
            ORDER BY user_id LIMIT 1)
          UNION ALL
          SELECT (SELECT w.user_id FROM workflows w
              WHERE coalesce(w.user_runner_id, w.managed_runner_id) = ${runnerId} AND w.status IN ${waiting}
                AND w.user_id > users.user_id
              ORDER BY w.user_id LIMIT 1)
          FROM users WHERE users.user_id IS NOT NULL
        ), candidates AS (
          SELECT c.*, c.priority + greatest(0, floor(extract(epoch FROM now() - c.created_at) * 1000 / ${agingMs}::float8)) AS effective
          FROM users u CROSS JOIN LATERAL (${oldestAt(2)} UNION ALL ${oldestAt(1)} UNION ALL ${oldestAt(0)}) c
          WHERE u.user_id IS NOT NULL
        ), load AS (${loadOn(runnerId)}), ranked AS (
          SELECT c.id, c.effective, c.created_at, coalesce(load.n, 0)
              + row_number() OVER (PARTITION BY c.user_id ORDER BY c.effective DESC, c.created_at, c.id) AS turn
          FROM candidates c LEFT JOIN load ON load.user_id = c.user_id
        ), first AS (
          SELECT * FROM ranked ORDER BY effective DESC, turn, created_at, id LIMIT ${limit}
        ), picked AS (
          SELECT w.id, w.submitted_at IS NOT NULL AS resubmit, r.effective, r.turn
          FROM first r JOIN workflows w ON w.id = r.id
          WHERE w.status IN ${waiting} AND (w.claimed_by IS NULL OR w.lease_expires_at < now())
          FOR UPDATE OF w SKIP LOCKED
        ), claimed AS (
          UPDATE workflows w SET claimed_by = ${owner}, lease_expires_at = ${leaseEnd(leaseMs)},
            submitted_at = coalesce(w.submitted_at, now())
          FROM picked WHERE w.id = picked.id
          RETURNING ${claimedColumns}, picked.resubmit, picked.effective, picked.turn)
        SELECT ${every}, resubmit FROM claimed ORDER BY effective DESC, turn, created_at, id`
    },
    /** The runner's unclaimed waiting work, oldest first, with each user's count on it, in one statement. */
    waitingOn: (runnerId: string, limit: number) =>
      sql`WITH waiting AS (
          SELECT id, user_id, priority, created_at FROM workflows
          WHERE coalesce(user_runner_id, managed_runner_id) = ${runnerId} AND status IN ${waiting}
            AND (claimed_by IS NULL OR lease_expires_at < now())
          ORDER BY created_at, id LIMIT ${limit}
        ), load AS (${loadOn(runnerId)})
        SELECT 'waiting' AS kind, id::text, user_id::text, priority::int, created_at, 0 AS n FROM waiting
        UNION ALL SELECT 'load', NULL, user_id::text, NULL, NULL, n FROM load`,
    /**
     * The runners among `runnerIds` with a claimable workflow: per runner, a probe of the waiting
     * index (`workflows_waiting_runner_user_idx`) for one unclaimed or lapsed row.
     */
    claimable: (runnerIds: ReadonlyArray<string>) =>
      sql<{ runner_id: string }>`SELECT r.id::text AS runner_id FROM unnest(${runnerIds}::uuid[]) AS r(id)
        WHERE EXISTS (SELECT 1 FROM workflows
          WHERE coalesce(user_runner_id, managed_runner_id) = r.id AND status IN ${waiting}
            AND (claimed_by IS NULL OR lease_expires_at < now()))`,
    renew: (ids: ReadonlyArray<string>, owner: string, leaseMs: number) =>
      sql`UPDATE workflows SET lease_expires_at = ${leaseEnd(leaseMs)}
        WHERE id = ANY(${ids}::uuid[]) AND claimed_by = ${owner}`,
    release: (ids: ReadonlyArray<string>, owner: string) =>
      sql`UPDATE workflows SET claimed_by = NULL, lease_expires_at = NULL
        WHERE id = ANY(${ids}::uuid[]) AND claimed_by = ${owner}`
  }
}

/** What the listener feeds (`listen`) and the queue's `wakeups` reads (`stream`). */
export interface WorkWakeups {
  readonly channel: string
  readonly listen: ListenChannel
  readonly stream: Stream.Stream<string>
}

/**
 * A bounded hub of runner ids from `channel`; after every (re)connection it emits core's
 * `WAKE_ALL`: notifications sent meanwhile are lost, so any runner may have new work.
 */
export const workWakeupsOn = (
  options: PgDispatchQueueOptions = {}
): Effect.Effect<WorkWakeups, never, Scope.Scope> =>
  Effect.gen(function*() {
    const channel = options.channel ?? DEFAULT_WORK_CHANNEL
    const hub = yield* Effect.acquireRelease(PubSub.sliding<string>(options.wakeupBuffer ?? 1024), PubSub.shutdown)
    return {
      channel,
      listen: {
        channel,
        onPayload: (runnerId) => Effect.asVoid(PubSub.publish(hub, runnerId)),
        onConnected: Effect.asVoid(PubSub.publish(hub, WAKE_ALL))
      },
      stream: Stream.fromPubSub(hub)
    }
  })

/** The queue on the `SqlClient` in context; `wakeups` come from the store's listener. */
export const makePgDispatchQueue = (wakeups: WorkWakeups) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const q = dispatchQueries(sql)
    const decodeClaims = decodeRows(ClaimedRow)
    const decodeQueueRows = decodeRows(QueueRow)
    return DispatchQueue.of({
      claim: (runnerId, owner, limit, leaseMs, agingMs) =>
        isId(runnerId) && limit > 0
          ? run(q.claim(runnerId, owner, limit, leaseMs, Math.max(1, agingMs))).pipe(
            Effect.flatMap(decodeClaims),
            Effect.map((rows) => rows.map(({ resubmit, ...workflow }) => ({ workflow, resubmit }))),
            orStorageError("dispatch.claim")
          )
          : Effect.succeed([]),
      waitingOn: (runnerId, limit) =>
        isId(runnerId) && limit > 0
          ? run(q.waitingOn(runnerId, limit)).pipe(
            Effect.flatMap(decodeQueueRows),
            Effect.map((rows) => ({
              waiting: rows.flatMap((r) =>
                r.kind === "waiting" && r.id !== null && r.priority !== null && r.created_at !== null
                  ? [{ id: r.id, user_id: r.user_id, priority: r.priority, created_at: DateTime.toEpochMillis(r.created_at) }]
                  : []
              ),
              onRunner: new Map(rows.flatMap((r) => (r.kind === "load" ? [[r.user_id, r.n] as const] : [])))
            })),
            orStorageError("dispatch.waitingOn")
          )
          : Effect.succeed({ waiting: [], onRunner: new Map() }),
      claimable: (runnerIds) => {
        const valid = runnerIds.filter(isId)
        if (valid.length === 0) return Effect.succeed(new Set<string>())
        const asAsked = spelledAsAsked(valid)
        return run(q.claimable(valid)).pipe(
          Effect.map((rows) => new Set(rows.map((r) => asAsked(r.runner_id)))),
          orStorageError("dispatch.claimable")
        )
      },
      renew: (ids, owner, leaseMs) => {
        const valid = ids.filter(isId)
        return valid.length === 0
          ? Effect.void
          : run(q.renew(valid, owner, leaseMs)).pipe(Effect.asVoid, orStorageError("dispatch.renew"))
      },
      release: (ids, owner) => {
        const valid = ids.filter(isId)
        return valid.length === 0
          ? Effect.void
          : run(q.release(valid, owner)).pipe(Effect.asVoid, orStorageError("dispatch.release"))
      },
      // Through the SqlClient, so inside a transaction it is delivered at COMMIT (and never on rollback).
      notify: (runnerId) =>
        run(sql`SELECT pg_notify(${wakeups.channel}, ${runnerId})`).pipe(Effect.asVoid, orStorageError("dispatch.notify")),
      wakeups: wakeups.stream
    })
  })
