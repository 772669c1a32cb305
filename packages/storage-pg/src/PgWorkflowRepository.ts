/** Workflows and their outputs in PostgreSQL. */
import * as SqlClient from "@effect/sql/SqlClient"
import type * as Statement from "@effect/sql/Statement"
import {
  DuplicateIdempotencyKey,
  LimitReached,
  ManagedRunnerId,
  NotFound,
  RunnerId,
  type RunnerRef,
  type StorageError,
  type Workflow,
  type WorkflowInsertLimits,
  type WorkflowListQuery,
  WorkflowOutput,
  WorkflowRepository,
  type WorkflowStatus,
  WorkflowSummary
} from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import {
  DbTimestamp,
  decodeFirst,
  decodeRows,
  isId,
  limitOffset,
  lockUserInserts,
  orStorageError,
  pageOf,
  readCount,
  run,
  toDate,
  toJson,
  toNullableDate,
  toTextArray,
  transaction,
  UNFINISHED_STATUSES_SQL,
  updateRow
} from "./Sql.js"
import { WORKFLOW_COLUMNS, WorkflowRow, workflowTimestamps } from "./WorkflowRows.js"

const SummaryRow = Schema.Struct({ ...WorkflowSummary.fields, ...workflowTimestamps })
// `size` is a bigint column, read as float8 (exact for every size a file can have).
const OutputRow = Schema.Struct({ ...WorkflowOutput.fields, created_at: DbTimestamp })
// A runner with unfinished work, by the column that names it.
const RunnerRefRow = Schema.Union(
  Schema.Struct({ kind: Schema.Literal("user"), id: RunnerId }),
  Schema.Struct({ kind: Schema.Literal("managed"), id: ManagedRunnerId })
)

const SUMMARY_COLUMNS = "id, name, status, tags, created_at, updated_at, started_at, completed_at"
const OUTPUT_COLUMNS =
  "id, workflow_id, node_id, filename, subfolder, type, content_type, size::float8 AS size, blob_key, created_at"

/** The columns of a workflow record, as parameters (everything but the dispatcher's lease). */
const columnsOf = (w: Workflow) => ({
  id: w.id,
  user_id: w.user_id,
  name: w.name,
  status: w.status,
  tags: toTextArray(w.tags),
  created_at: toDate(w.created_at),
  updated_at: toDate(w.updated_at),
  started_at: toNullableDate(w.started_at),
  completed_at: toNullableDate(w.completed_at),
  user_runner_id: w.user_runner_id,
  managed_runner_id: w.managed_runner_id,
  workflow_json: toJson(w.workflow_json),
  workflow_params: toJson(w.workflow_params),
  prompt_id: w.prompt_id,
  queue_number: w.queue_number,
  error_node: w.error_node,
  exception_type: w.exception_type,
  exception_message: w.exception_message,
  idempotency_key: w.idempotency_key,
  dispatch_attempts: w.dispatch_attempts,
  submitted_at: toNullableDate(w.submitted_at)
})

/**
 * The SQL of the workflow reads, as statements: the repository runs them, the index tests
 * EXPLAIN them. Ids must have passed `isId`.
 */
export const workflowQueries = (sql: SqlClient.SqlClient) => {
  const workflows = sql.literal(WORKFLOW_COLUMNS)
  const summaries = sql.literal(SUMMARY_COLUMNS)
  const unfinished = sql.literal(UNFINISHED_STATUSES_SQL)
  const runnerColumn = (runner: RunnerRef) => sql(runner.kind === "user" ? "user_runner_id" : "managed_runner_id")
  return {
    findById: (id: string) => sql`SELECT ${workflows} FROM workflows WHERE id = ${id}`,
    findByIdempotencyKey: (userId: string, key: string, since: DateTime.Utc | undefined) =>
      since === undefined
        ? sql`SELECT ${workflows} FROM workflows WHERE user_id = ${userId} AND idempotency_key = ${key}`
        : sql`SELECT ${workflows} FROM workflows
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
    /** One indexed count per kind of runner (each kind has its partial index). */
    countInFlight: (runnerIds: ReadonlyArray<string>) =>
      sql<{ runner_id: string; n: number }>`
        SELECT user_runner_id AS runner_id, count(*)::int AS n FROM workflows
          WHERE status IN ${unfinished} AND user_runner_id = ANY(${runnerIds}::uuid[]) GROUP BY user_runner_id
        UNION ALL
        SELECT managed_runner_id, count(*)::int FROM workflows
          WHERE status IN ${unfinished} AND managed_runner_id = ANY(${runnerIds}::uuid[]) GROUP BY managed_runner_id`,
    /** Either kind of runner (a workflow has at most one), by migration 0009's expression index. */
    listUnfinishedOnRunner: (runnerId: string, limit: number) =>
      sql`SELECT ${workflows} FROM workflows
        WHERE coalesce(user_runner_id, managed_runner_id) = ${runnerId} AND status IN ${unfinished}
        ORDER BY created_at, id LIMIT ${limit}`,
    /** One DISTINCT per kind of runner, each over its partial index of unfinished workflows. */
    unfinishedRunners: () =>
      sql`SELECT 'user' AS kind, id FROM (SELECT DISTINCT user_runner_id AS id FROM workflows
          WHERE status IN ${unfinished} AND user_runner_id IS NOT NULL) AS u
        UNION ALL
        SELECT 'managed', id FROM (SELECT DISTINCT managed_runner_id AS id FROM workflows
          WHERE status IN ${unfinished} AND managed_runner_id IS NOT NULL) AS m`,
    listByStatus: (statuses: ReadonlyArray<WorkflowStatus>, limit: number) =>
      sql`SELECT ${workflows} FROM workflows WHERE status = ANY(${statuses}::text[]) ORDER BY created_at, id LIMIT ${limit}`,
    listOutputs: (workflowId: string) =>
      sql`SELECT ${sql.literal(OUTPUT_COLUMNS)} FROM workflow_outputs WHERE workflow_id = ${workflowId} ORDER BY position`
  }
}

export const makePgWorkflowRepository = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const q = workflowQueries(sql)
  const decodeWorkflow = decodeFirst(WorkflowRow)
  const decodeSummaries = decodeRows(SummaryRow)
  const count = (statement: Statement.Statement<{ n: number }>, operation: string) =>
    run(statement).pipe(Effect.flatMap(readCount), orStorageError(operation))

  const findById = (id: string): Effect.Effect<Option.Option<Workflow>, StorageError> =>
    isId(id)
      ? run(q.findById(id)).pipe(Effect.flatMap(decodeWorkflow), orStorageError("workflows.findById"))
      : Effect.succeedNone

  const insertRow = (w: Workflow) =>
    run(sql`INSERT INTO workflows ${sql.insert(columnsOf(w))}`).pipe(orStorageError("workflows.insert"))

  /** Fails with the user's live workflow of this key; a key older than `since` is released for reuse. */
  const claimIdempotencyKey = (w: Workflow, key: string, since: DateTime.Utc | undefined) =>
    Effect.gen(function*() {
      const existing = yield* run(q.findByIdempotencyKey(w.user_id, key, undefined)).pipe(
        Effect.flatMap(decodeWorkflow),
        orStorageError("workflows.insert (idempotency key)")
      )
      if (Option.isNone(existing)) return
      if (since === undefined || DateTime.greaterThanOrEqualTo(existing.value.created_at, since)) {
        return yield* Effect.fail(new DuplicateIdempotencyKey({ existing: existing.value }))
      }
      yield* run(sql`UPDATE workflows SET idempotency_key = NULL WHERE id = ${existing.value.id}`).pipe(
        orStorageError("workflows.insert (release idempotency key)")
      )
    })

  const checkLimits = (w: Workflow, limits: WorkflowInsertLimits) =>
    Effect.gen(function*() {
      const active = yield* count(q.countActive(w.user_id), "workflows.insert (active limit)")
      if (active + 1 > limits.active_workflows) return yield* Effect.fail(new LimitReached({ limit: "active_workflows" }))
      const today = yield* count(q.countCreatedSince(w.user_id, limits.day_start), "workflows.insert (daily limit)")
      if (today + 1 > limits.workflows_per_day) return yield* Effect.fail(new LimitReached({ limit: "workflows_per_day" }))
    })

  return WorkflowRepository.of({
    insert: (w, options = {}) => {
      const { idempotency_since, limits } = options
      const key = w.idempotency_key
      if (limits === undefined && key === null) return Effect.as(insertRow(w), w)
      // Serialize this user's counted inserts: check the key and count, then insert, atomically.
      return transaction(sql, "workflows.insert")(Effect.gen(function*() {
        yield* lockUserInserts(sql, w.user_id)
        if (key !== null) yield* claimIdempotencyKey(w, key, idempotency_since)
        if (limits !== undefined) yield* checkLimits(w, limits)
        yield* insertRow(w)
        return w
      }))
    },
    findById,
    findForUser: (userId, id) => Effect.map(findById(id), Option.filter((w) => w.user_id === userId)),
    findByIdempotencyKey: (userId, key, since) =>
      isId(userId)
        ? run(q.findByIdempotencyKey(userId, key, since)).pipe(
          Effect.flatMap(decodeWorkflow),
          orStorageError("workflows.findByIdempotencyKey")
        )
        : Effect.succeedNone,
    update: (id, f) =>
      isId(id)
        ? updateRow(sql, {
          table: "workflows",
          id,
          select: q.findById(id),
          decode: decodeWorkflow,
          columns: columnsOf,
          notFound: NotFound.workflow
        }, f)
        : Effect.fail(NotFound.workflow()),
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
    countInFlight: (runnerIds) => {
      const counts = new Map<string, number>(runnerIds.map((id) => [id, 0]))
      const ids = runnerIds.filter(isId)
      if (ids.length === 0) return Effect.succeed(counts)
      // PostgreSQL spells ids in lowercase: report them as the caller did.
      const asAsked = new Map(ids.map((id) => [id.toLowerCase(), id]))
      return run(q.countInFlight(ids)).pipe(
        Effect.map((rows) => {
          for (const row of rows) {
            const id = asAsked.get(row.runner_id) ?? row.runner_id
            counts.set(id, (counts.get(id) ?? 0) + row.n)
          }
          return counts
        }),
        orStorageError("workflows.countInFlight")
      )
    },
    listByStatus: (statuses, limit) =>
      statuses.length === 0
        ? Effect.succeed([])
        : run(q.listByStatus(statuses, limit)).pipe(
          Effect.flatMap(decodeRows(WorkflowRow)),
          orStorageError("workflows.listByStatus")
        ),
    listUnfinishedOnRunner: (runnerId, limit) =>
      isId(runnerId) && limit > 0
        ? run(q.listUnfinishedOnRunner(runnerId, limit)).pipe(
          Effect.flatMap(decodeRows(WorkflowRow)),
          orStorageError("workflows.listUnfinishedOnRunner")
        )
        : Effect.succeed([]),
    unfinishedRunners: run(q.unfinishedRunners()).pipe(
      Effect.flatMap(decodeRows(RunnerRefRow)),
      orStorageError("workflows.unfinishedRunners")
    ),
    addOutputs: (outputs) =>
      outputs.length === 0
        ? Effect.void
        : run(sql`INSERT INTO workflow_outputs ${
          sql.insert(outputs.map((o) => ({
            id: o.id,
            workflow_id: o.workflow_id,
            node_id: o.node_id,
            filename: o.filename,
            subfolder: o.subfolder,
            type: o.type,
            content_type: o.content_type,
            size: o.size,
            blob_key: o.blob_key,
            created_at: toDate(o.created_at)
          })))
        }`).pipe(Effect.asVoid, orStorageError("workflows.addOutputs")),
    listOutputs: (workflowId) =>
      isId(workflowId)
        ? run(q.listOutputs(workflowId)).pipe(Effect.flatMap(decodeRows(OutputRow)), orStorageError("workflows.listOutputs"))
        : Effect.succeed([])
  })
})

/** `WorkflowRepository` on the `SqlClient` in context. */
export const PgWorkflowRepository: Layer.Layer<WorkflowRepository, never, SqlClient.SqlClient> = Layer.effect(
  WorkflowRepository,
  makePgWorkflowRepository
)
