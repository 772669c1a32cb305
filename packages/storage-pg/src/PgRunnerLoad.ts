/**
 * Core's `RunnerLoad` in one statement: the user's active runners and the active managed runners
 * of the given types, each with a count of its unfinished workflows over the in-flight partial
 * indexes (migration 0002).
 */
import * as SqlClient from "effect/sql/SqlClient"
import { RunnerLoad, type RunnerType } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { decodeRows, isId, orStorageError, run } from "./Sql.js"
import { table } from "./Table.js"
import { runners } from "./Tables.js"
import { UNFINISHED_SQL } from "./WorkflowWrites.js"

// What a candidate says of its runner: the columns both runner tables have in the same form.
// `connection` is the user runner's; a managed runner is always reached directly.
const { comfyui, endpoint, headers, name, status, tags } = runners.row.fields
const targets = table("runners", Schema.Struct({ id: Schema.String, name, endpoint, headers, tags, status, comfyui }))

const CandidateRow = Schema.Struct({
  kind: Schema.Literals(["user", "managed"]),
  ...targets.row.fields,
  connection: runners.row.fields.connection,
  in_flight: Schema.Int
})

export const runnerLoadQuery = (sql: SqlClient.SqlClient, userId: string, types: ReadonlyArray<RunnerType>) => {
  const unfinished = sql.literal(UNFINISHED_SQL)
  return sql`SELECT 'user' AS kind, ${sql.literal(targets.list("r"))}, r.connection,
      (SELECT count(*)::int FROM workflows w WHERE w.user_runner_id = r.id AND w.status IN ${unfinished}) AS in_flight
    FROM runners r WHERE r.user_id = ${userId} AND r.status = 'active'
    UNION ALL
    SELECT 'managed', ${sql.literal(targets.list("m"))}, 'direct',
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
