/** User-owned runners in PostgreSQL. */
import * as SqlClient from "effect/sql/SqlClient"
import { type RunnerComfyUI, RunnerNotFound, RunnerRepository } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { countOwned, deleteRow, insertWithinLimit, isId, orStorageError, run, toJson } from "./Sql.js"
import { NEWEST_FIRST, tableOn } from "./Table.js"
import { runners } from "./Tables.js"

/** `setComfyUI` of either runner table: one UPDATE of the column, true when the runner exists. */
export const setComfyUIIn = (sql: SqlClient.SqlClient, table: "runners" | "managed_runners") => (id: string, comfyui: RunnerComfyUI) =>
  isId(id)
    ? run(sql`UPDATE ${sql(table)} SET comfyui = ${toJson(comfyui)} WHERE id = ${id} RETURNING 1`).pipe(
      Effect.map((rows) => rows.length > 0),
      orStorageError(`${table}.setComfyUI`)
    )
    : Effect.succeed(false)

export const makePgRunnerRepository = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = tableOn(sql, runners)

  const findById = (id: string) => isId(id) ? t.findOne("runners.findById", sql`id = ${id}`) : Effect.succeedNone

  return RunnerRepository.of({
    insert: (r, limit) =>
      insertWithinLimit(sql, "runners", r.user_id, limit, t.insert(r).pipe(orStorageError("runners.insert"))).pipe(Effect.as(r)),
    findById,
    findForUser: (userId, id) => Effect.map(findById(id), Option.filter((r) => r.user_id === userId)),
    update: (userId, id, changes) =>
      isId(userId) && isId(id)
        ? t.update("runners.update", sql`id = ${id} AND user_id = ${userId}`, changes, () => new RunnerNotFound())
        : Effect.fail(new RunnerNotFound()),
    delete: (userId, id) => deleteRow(sql, "runners", id, userId),
    setComfyUI: setComfyUIIn(sql, "runners"),
    list: (userId, query) =>
      isId(userId)
        ? t.page("runners.list", sql.and([sql`user_id = ${userId}`, ...(query.status === undefined ? [] : [sql`status = ${query.status}`])]), query)
        : Effect.succeed({ items: [], total: 0 }),
    count: (userId) => countOwned(sql, "runners", userId),
    listActiveForUser: (userId) =>
      isId(userId)
        ? t.findAll("runners.listActiveForUser", sql`user_id = ${userId} AND status = 'active'`, NEWEST_FIRST)
        : Effect.succeed([])
  })
})

/** `RunnerRepository` on the `SqlClient` in context. */
export const PgRunnerRepository: Layer.Layer<RunnerRepository, never, SqlClient.SqlClient> = Layer.effect(
  RunnerRepository,
  makePgRunnerRepository
)
