/**
 * Workflows and their outputs in PostgreSQL. Reads are plain statements (the SQL is in
 * `workflowQueries`, which the index tests EXPLAIN); the writes are one statement each
 * (WorkflowWrites.ts), and transitions that arrive together share a statement (GroupCommit.ts).
 */
import * as SqlClient from "effect/sql/SqlClient"
import type * as Statement from "effect/sql/Statement"
import {
  DuplicateIdempotencyKey,
  LimitReached,
  ManagedRunnerId,
  planTransition,
  RunnerId,
  type RunnerRef,
  StorageError,
  type TransitionOutcome,
  type TransitionPlan,
  type TransitionRequest,
  type Workflow,
  type WorkflowListQuery,
  WorkflowRepository,
  WorkflowStatus
} from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { makeGroupCommit } from "./GroupCommit.js"
import { DEFAULT_WORK_CHANNEL } from "./PgDispatchQueue.js"
import { DEFAULT_EVENTS_CHANNEL } from "./PgEventWakeups.js"
import {
  decodeRows,
  isId,
  limitOffset,
  orStorageError,
  pageOf,
  readCount,
  run,
  spelledAsAsked,
  toDate
} from "./Sql.js"
import { type Channels, createStatement, transitionStatement, UNFINISHED_SQL } from "./WorkflowWrites.js"
import { tableOn } from "./Table.js"
import { workflowHeads, workflowOutputs, workflows, workflowSummaries } from "./WorkflowRows.js"

// A runner with unfinished work, by the column that names it.
const RunnerRefRow = Schema.Union([Schema.Struct({ kind: Schema.Literal("user"), id: RunnerId }),
  Schema.Struct({ kind: Schema.Literal("managed"), id: ManagedRunnerId })])

/** Transitions written together at most (one statement). */
export const TRANSITION_BATCH = 500

/**
 * The SQL of the workflow reads, as statements: the repository runs them, the index tests
 * EXPLAIN them. Ids must have passed `isId`.
 */
export const workflowQueries = (sql: SqlClient.SqlClient) => {
  const every = sql.literal(workflows.list())
  const heads = sql.literal(workflowHeads.list())
  const summaries = sql.literal(workflowSummaries.list())
  const unfinished = sql.literal(UNFINISHED_SQL)
  const runnerColumn = (runner: RunnerRef) => sql(runner.kind === "user" ? "user_runner_id" : "managed_runner_id")
  return {
    findById: (id: string) => sql`SELECT ${every} FROM workflows WHERE id = ${id}`,
    findHead: (id: string) => sql`SELECT ${heads} FROM workflows WHERE id = ${id}`,
    findByIdempotencyKey: (userId: string, key: string, since: DateTime.Utc | undefined) =>
      since === undefined
        ? sql`SELECT ${every} FROM workflows WHERE user_id = ${userId} AND idempotency_key = ${key}`
        : sql`SELECT ${every} FROM workflows
            WHERE user_id = ${userId} AND idempotency_key = ${key} AND created_at >= ${toDate(since)}`,
    /** The page and the total of a list; `status` and `tag` narrow both. */
    list: (userId: string, query: WorkflowListQuery) => {
      const { limit, offset } = limitOffset(query)
      const where = sql.and([
        sql`user_id = ${userId}`,
        ...(query.status === undefined ? [] : [sql`status = ${query.status}`]),
        ...(query.tag === undefined ? [] : [sql`tags @> ARRAY[${query.tag}]::text[]`])
      ])
      return {
        items: sql`SELECT ${summaries} FROM workflows WHERE ${where}
          ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`,
        total: sql<{ n: number }>`SELECT count(*)::int AS n FROM workflows WHERE ${where}`
      }
    },
    history: (userId: string, runner: RunnerRef, limit: number) =>
      sql`SELECT ${summaries} FROM workflows WHERE user_id = ${userId} AND ${runnerColumn(runner)} = ${runner.id}
        ORDER BY created_at DESC, id DESC LIMIT ${limit}`,
    countActive: (userId: string) =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM workflows WHERE user_id = ${userId} AND status IN ${unfinished}`,
    countCreatedSince: (userId: string, since: DateTime.Utc) =>
      sql<{ n: number }>`SELECT count(*)::int AS n FROM workflows WHERE user_id = ${userId} AND created_at >= ${toDate(since)}`,
    /** Over the rows of migration 0002's partial index of unfinished workflows (never the finished ones). */
    countUnfinishedByStatus: sql`
      SELECT status, count(*)::int AS n FROM workflows WHERE status IN ${unfinished} GROUP BY status`,
    /** One indexed count per kind of runner (each kind has its partial index). */
    countInFlight: (runnerIds: ReadonlyArray<string>) =>
      sql<{ runner_id: string; n: number }>`
        SELECT user_runner_id AS runner_id, count(*)::int AS n FROM workflows
          WHERE status IN ${unfinished} AND user_runner_id = ANY(${runnerIds}::uuid[]) GROUP BY user_runner_id
        UNION ALL
        SELECT managed_runner_id, count(*)::int FROM workflows
          WHERE status IN ${unfinished} AND managed_runner_id = ANY(${runnerIds}::uuid[]) GROUP BY managed_runner_id`,
    /** Either kind of runner (a workflow has at most one), by migration 0011's index (its predicate, word for word). */
    listSubmittedOnRunner: (runnerId: string, limit: number) =>
      sql`SELECT ${heads} FROM workflows
        WHERE coalesce(user_runner_id, managed_runner_id) = ${runnerId}
          AND (status IN ('queued', 'running') OR (status IN ('accepted', 'uploaded') AND submitted_at IS NOT NULL))
        ORDER BY created_at, id LIMIT ${limit}`,
    /** One DISTINCT per kind of runner, each over its partial index of unfinished workflows. */
    unfinishedRunners: () =>
      sql`SELECT 'user' AS kind, id FROM (SELECT DISTINCT user_runner_id AS id FROM workflows
          WHERE status IN ${unfinished} AND user_runner_id IS NOT NULL) AS u
        UNION ALL
        SELECT 'managed', id FROM (SELECT DISTINCT managed_runner_id AS id FROM workflows
          WHERE status IN ${unfinished} AND managed_runner_id IS NOT NULL) AS m`,
    listOutputs: (workflowId: string) =>
      sql`SELECT ${sql.literal(workflowOutputs.list())} FROM workflow_outputs WHERE workflow_id = ${workflowId} ORDER BY position`,
    /** The user's quota row (which limit a refused create hit). */
    quota: (userId: string) =>
      sql<{ active: number; day_start: Date; created_on_day: number }>`SELECT active, day_start, created_on_day
        FROM workflow_quotas WHERE user_id = ${userId}`
  }
}

const UNIQUE_VIOLATION = "23505"
const isUniqueViolation = (e: StorageError): boolean => e.message.includes(`SQLSTATE ${UNIQUE_VIOLATION}`)

export const makePgWorkflowRepository = (channels: Channels = { events: DEFAULT_EVENTS_CHANNEL, work: DEFAULT_WORK_CHANNEL }) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const q = workflowQueries(sql)
    const decodeWorkflow = tableOn(sql, workflows).decodeFirst
    const { decodeFirst: decodeHead, decodeRows: decodeHeads } = tableOn(sql, workflowHeads)
    const decodeSummaries = tableOn(sql, workflowSummaries).decodeRows
    const decodeStatusCounts = decodeRows(Schema.Struct({ status: WorkflowStatus, n: Schema.Int }))
    const count = (statement: Statement.Statement<{ n: number }>, operation: string) =>
      run(statement).pipe(Effect.flatMap(readCount), orStorageError(operation))

    const findById = (id: string): Effect.Effect<Option.Option<Workflow>, StorageError> =>
      isId(id) ? run(q.findById(id)).pipe(Effect.flatMap(decodeWorkflow), orStorageError("workflows.findById")) : Effect.succeedNone

    /** The limit a refused create hit, from the quota row as it is now. */
    const limitHit = (w: Workflow, maxActive: number) =>
      run(q.quota(w.user_id)).pipe(
        orStorageError("workflows.create (quota)"),
        Effect.map((rows) =>
          new LimitReached({ limit: (rows[0]?.active ?? 0) + 1 > maxActive ? "active_workflows" : "workflows_per_day" })
        )
      )

    /** Fails with the user's live workflow of this key; a key older than `since` is released for reuse. */
    const checkIdempotencyKey = (w: Workflow, key: string, since: DateTime.Utc | undefined) =>
      Effect.gen(function*() {
        const existing = yield* run(q.findByIdempotencyKey(w.user_id, key, undefined)).pipe(
          Effect.flatMap(decodeWorkflow),
          orStorageError("workflows.create (idempotency key)")
        )
        if (Option.isNone(existing)) return
        if (since === undefined || DateTime.isGreaterThanOrEqualTo(existing.value.created_at, since)) {
          return yield* Effect.fail(new DuplicateIdempotencyKey({ existing: existing.value }))
        }
        yield* run(sql`UPDATE workflows SET idempotency_key = NULL WHERE id = ${existing.value.id}`).pipe(
          orStorageError("workflows.create (release idempotency key)")
        )
      })

    const create: WorkflowRepository["Service"]["create"] = (w, options = {}) =>
      Effect.gen(function*() {
        const { idempotency_since, limits } = options
        const key = w.idempotency_key
        if (key !== null) yield* checkIdempotencyKey(w, key, idempotency_since)
        const statement = createStatement(sql, channels, w, limits === undefined ? undefined : {
          maxActive: limits.active_workflows,
          maxPerDay: limits.workflows_per_day,
          dayStart: limits.day_start
        })
        const rows = yield* run(statement).pipe(
          orStorageError("workflows.create"),
          // A concurrent create with the same key got there first: answer with its workflow.
          Effect.catchIf((e) => key !== null && isUniqueViolation(e), () =>
            Effect.flatMap(checkIdempotencyKey(w, key!, idempotency_since), () =>
              Effect.fail(new StorageError({ message: "PostgreSQL store: workflows.create: idempotency key taken and released" }))))
        )
        if (rows.length === 0) return yield* Effect.fail(yield* limitHit(w, limits?.active_workflows ?? Infinity))
        return w
      })

    /** Writes a batch of transitions in one statement; an outcome per request. */
    const writeTransitions = (batch: readonly [
      { readonly request: TransitionRequest; readonly plan: TransitionPlan },
      ...Array<{ readonly request: TransitionRequest; readonly plan: TransitionPlan }>
    ]) =>
      Effect.gen(function*() {
        const rows = yield* run(transitionStatement(sql, channels, batch)).pipe(
          Effect.flatMap(decodeHeads),
          orStorageError("workflows.transition")
        )
        const applied = new Map(rows.map((w) => [w.id.toLowerCase(), w]))
        const refused = batch.filter(({ request }) => !applied.has(request.id.toLowerCase())).map(({ request }) => request.id)
        // Why the others were not applied: the status now (or no such workflow).
        const current = refused.length === 0 ? [] : yield* run(
          sql<{ id: string; status: string; user_id: string }>`SELECT id, status, user_id FROM workflows WHERE id = ANY(${refused}::uuid[])`
        ).pipe(orStorageError("workflows.transition (refused)"))
        const now = new Map(current.map((r) => [r.id.toLowerCase(), r]))
        return batch.map(({ request }): TransitionOutcome => {
          const id = request.id.toLowerCase()
          const w = applied.get(id)
          if (w !== undefined) return { _tag: "Applied", workflow: w }
          const row = now.get(id)
          if (row === undefined || (request.owner !== undefined && row.user_id !== request.owner.toLowerCase())) return { _tag: "Missing" }
          return { _tag: "Refused", status: row.status as Workflow["status"] }
        })
      })

    const transitions = yield* makeGroupCommit({
      write: writeTransitions,
      key: ({ request }) => request.id.toLowerCase(),
      maxBatch: TRANSITION_BATCH,
      capacity: 10_000
    })

    return WorkflowRepository.of({
      create,
      transition: (request) => {
        if (!isId(request.id) || (request.owner !== undefined && !isId(request.owner))) return Effect.succeed({ _tag: "Missing" })
        const plan = planTransition(request.steps, request.at)
        if (Result.isFailure(plan)) return Effect.die(new Error(`an illegal chain of moves: ${plan.failure.message}`))
        return transitions({ request, plan: plan.success })
      },
      findById,
      findForUser: (userId, id) => Effect.map(findById(id), Option.filter((w) => w.user_id === userId)),
      findHeadForUser: (userId, id) =>
        isId(id)
          ? run(q.findHead(id)).pipe(
            Effect.flatMap(decodeHead),
            Effect.map(Option.filter((w) => w.user_id === userId)),
            orStorageError("workflows.findHeadForUser")
          )
          : Effect.succeedNone,
      findByIdempotencyKey: (userId, key, since) =>
        isId(userId)
          ? run(q.findByIdempotencyKey(userId, key, since)).pipe(Effect.flatMap(decodeWorkflow), orStorageError("workflows.findByIdempotencyKey"))
          : Effect.succeedNone,
      list: (userId, query) => {
        if (!isId(userId)) return Effect.succeed({ items: [], total: 0 })
        const { items, total } = q.list(userId, query)
        return pageOf("workflows.list", Effect.flatMap(run(items), decodeSummaries), total)
      },
      history: (userId, runner, limit) =>
        isId(userId) && isId(runner.id)
          ? run(q.history(userId, runner, limit)).pipe(Effect.flatMap(decodeSummaries), orStorageError("workflows.history"))
          : Effect.succeed([]),
      countActive: (userId) => isId(userId) ? count(q.countActive(userId), "workflows.countActive") : Effect.succeed(0),
      countCreatedSince: (userId, since) =>
        isId(userId) ? count(q.countCreatedSince(userId, since), "workflows.countCreatedSince") : Effect.succeed(0),
      countUnfinishedByStatus: run(q.countUnfinishedByStatus).pipe(
        Effect.flatMap(decodeStatusCounts),
        Effect.map((rows) => new Map(rows.map((r) => [r.status, r.n] as const))),
        orStorageError("workflows.countUnfinishedByStatus")
      ),
      countInFlight: (runnerIds) => {
        const counts = new Map<string, number>(runnerIds.map((id) => [id, 0]))
        const ids = runnerIds.filter(isId)
        if (ids.length === 0) return Effect.succeed(counts)
        const asAsked = spelledAsAsked(ids)
        return run(q.countInFlight(ids)).pipe(
          Effect.map((rows) => {
            for (const row of rows) {
              const id = asAsked(row.runner_id)
              counts.set(id, (counts.get(id) ?? 0) + row.n)
            }
            return counts
          }),
          orStorageError("workflows.countInFlight")
        )
      },
      listSubmittedOnRunner: (runnerId, limit) =>
        isId(runnerId) && limit > 0
          ? run(q.listSubmittedOnRunner(runnerId, limit)).pipe(Effect.flatMap(decodeHeads), orStorageError("workflows.listSubmittedOnRunner"))
          : Effect.succeed([]),
      unfinishedRunners: run(q.unfinishedRunners()).pipe(Effect.flatMap(decodeRows(RunnerRefRow)), orStorageError("workflows.unfinishedRunners")),
      listOutputs: (workflowId) =>
        isId(workflowId)
          ? run(q.listOutputs(workflowId)).pipe(Effect.flatMap(tableOn(sql, workflowOutputs).decodeRows), orStorageError("workflows.listOutputs"))
          : Effect.succeed([])
    })
  })

/** `WorkflowRepository` on the `SqlClient` in context (default NOTIFY channels), for the life of the scope. */
export const PgWorkflowRepository: Layer.Layer<WorkflowRepository, never, SqlClient.SqlClient> = Layer.effect(
  WorkflowRepository,
  makePgWorkflowRepository()
)
