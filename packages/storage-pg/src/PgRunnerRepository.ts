/** User-owned runners in PostgreSQL. */
import * as SqlClient from "effect/sql/SqlClient"
import { LimitReached, NotFound, Runner, type RunnerComfyUI, RunnerRepository } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import {
  DbTimestamp,
  decodeFirst,
  decodeRows,
  deleteRow,
  insertWithinLimit,
  isId,
  limitOffset,
  orStorageError,
  pageOf,
  readCount,
  run,
  toDate,
  toJson,
  toTextArray,
  updateRow
} from "./Sql.js"

const RunnerRow = Schema.Struct({ ...Runner.fields, created_at: DbTimestamp, updated_at: DbTimestamp })
const COLUMNS = "id, user_id, name, status, endpoint, tags, headers, comfyui, created_at, updated_at"

const columnsOf = (r: Runner) => ({
  id: r.id,
  user_id: r.user_id,
  name: r.name,
  status: r.status,
  endpoint: r.endpoint,
  tags: toTextArray(r.tags),
  headers: toJson(r.headers),
  comfyui: r.comfyui === null ? null : toJson(r.comfyui),
  created_at: toDate(r.created_at),
  updated_at: toDate(r.updated_at)
})

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
  const columns = sql.literal(COLUMNS)
  const decodeRunner = decodeFirst(RunnerRow)
  const decodeRunners = decodeRows(RunnerRow)

  const findById = (id: string) =>
    isId(id)
      ? run(sql`SELECT ${columns} FROM runners WHERE id = ${id}`).pipe(
        Effect.flatMap(decodeRunner),
        orStorageError("runners.findById")
      )
      : Effect.succeedNone

  return RunnerRepository.of({
    insert: (r, limit) =>
      insertWithinLimit(sql, {
        table: "runners",
        userId: r.user_id,
        limit,
        onLimit: () => new LimitReached({ limit: "runners" }),
        insert: run(sql`INSERT INTO runners ${sql.insert(columnsOf(r))}`).pipe(Effect.asVoid, orStorageError("runners.insert"))
      }).pipe(Effect.as(r)),
    findById,
    findForUser: (userId, id) => Effect.map(findById(id), Option.filter((r) => r.user_id === userId)),
    update: (userId, id, f) =>
      isId(userId) && isId(id)
        ? updateRow(sql, {
          table: "runners",
          id,
          select: sql`SELECT ${columns} FROM runners WHERE id = ${id} AND user_id = ${userId}`,
          decode: decodeRunner,
          columns: columnsOf,
          notFound: NotFound.runner
        }, (current) => Result.succeed(f(current)))
        : Effect.fail(NotFound.runner()),
    delete: (userId, id) => deleteRow(sql, "runners", id, userId),
    setComfyUI: setComfyUIIn(sql, "runners"),
    list: (userId, query) => {
      if (!isId(userId)) return Effect.succeed({ items: [], total: 0 })
      const { limit, offset } = limitOffset(query)
      const where = sql.and([
        sql`user_id = ${userId}`,
        ...(query.status === undefined ? [] : [sql`status = ${query.status}`])
      ])
      return pageOf(
        "runners.list",
        run(sql`SELECT ${columns} FROM runners WHERE ${where}
          ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`).pipe(Effect.flatMap(decodeRunners)),
        sql`SELECT count(*)::int AS n FROM runners WHERE ${where}`
      )
    },
    count: (userId) =>
      isId(userId)
        ? run(sql`SELECT count(*)::int AS n FROM runners WHERE user_id = ${userId}`).pipe(
          Effect.flatMap(readCount),
          orStorageError("runners.count")
        )
        : Effect.succeed(0),
    listActiveForUser: (userId) =>
      isId(userId)
        ? run(sql`SELECT ${columns} FROM runners WHERE user_id = ${userId} AND status = 'active'
            ORDER BY created_at DESC, id DESC`).pipe(Effect.flatMap(decodeRunners), orStorageError("runners.listActiveForUser"))
        : Effect.succeed([])
  })
})

/** `RunnerRepository` on the `SqlClient` in context. */
export const PgRunnerRepository: Layer.Layer<RunnerRepository, never, SqlClient.SqlClient> = Layer.effect(
  RunnerRepository,
  makePgRunnerRepository
)
