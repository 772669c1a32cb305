/**
 * Core's `RunnerLoad` in one statement: the user's active runners and the active managed runners
 * of the given types, each with a count of its unfinished workflows over the in-flight partial
 * indexes (migration 0002).
 */
import * as SqlClient from "effect/sql/SqlClient"
import { RunnerComfyUI, RunnerLoad, RunnerStatus, type RunnerType } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { decodeRows, isId, orStorageError, run } from "./Sql.js"
import { UNFINISHED_SQL } from "./WorkflowWrites.js"

const CandidateRow = Schema.Struct({
  kind: Schema.Literals(["user", "managed"]),
  id: Schema.String,
  name: Schema.String,
  endpoint: Schema.String,
  headers: Schema.Record(Schema.String, Schema.String),
  tags: Schema.Array(Schema.String),
  status: RunnerStatus,
  comfyui: Schema.NullOr(RunnerComfyUI),
  in_flight: Schema.Int
})

export const runnerLoadQuery = (sql: SqlClient.SqlClient, userId: string, types: ReadonlyArray<RunnerType>) => {
  const unfinished = sql.literal(UNFINISHED_SQL)
  return sql`SELECT 'user' AS kind, r.id, r.name, r.endpoint, r.headers, r.tags, r.status, r.comfyui,
      (SELECT count(*)::int FROM workflows w WHERE w.user_runner_id = r.id AND w.status IN ${unfinished}) AS in_flight
    FROM runners r WHERE r.user_id = ${userId} AND r.status = 'active'
    UNION ALL
    SELECT 'managed', m.id, m.name, m.endpoint, m.headers, m.tags, m.status, m.comfyui,
      (SELECT count(*)::int FROM workflows w WHERE w.managed_runner_id = m.id AND w.status IN ${unfinished})
    FROM managed_runners m WHERE m.status = 'active' AND m.runner_type = ANY(${types}::text[])`
}

export const makePgRunnerLoad = Effect.map(SqlClient.SqlClient, (sql) => {
  const decode = decodeRows(CandidateRow)
  return RunnerLoad.of({
    candidates: (userId, types) =>
      isId(userId)
        ? run(runnerLoadQuery(sql, userId, types)).pipe(
          Effect.flatMap(decode),
          Effect.map((rows) => rows.map(({ in_flight, ...target }) => ({ target, in_flight }))),
          orStorageError("runners.candidates")
        )
        : Effect.succeed([])
  })
})

export const PgRunnerLoad: Layer.Layer<RunnerLoad, never, SqlClient.SqlClient> = Layer.effect(RunnerLoad, makePgRunnerLoad)
