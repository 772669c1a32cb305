/** Operator-managed runners in PostgreSQL. */
import * as SqlClient from "effect/sql/SqlClient"
import { ManagedRunner, ManagedRunnerRepository, NotFound } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import {
  DbTimestamp,
  decodeFirst,
  decodeRows,
  deleteRow,
  isId,
  limitOffset,
  orStorageError,
  pageOf,
  run,
  toDate,
  toJson,
  toTextArray,
  updateRow
} from "./Sql.js"
import { setComfyUIIn } from "./PgRunnerRepository.js"

const ManagedRunnerRow = Schema.Struct({ ...ManagedRunner.fields, created_at: DbTimestamp, updated_at: DbTimestamp })
const COLUMNS = "id, name, runner_type, status, endpoint, headers, tags, comfyui, created_at, updated_at"

const columnsOf = (r: ManagedRunner) => ({
  id: r.id,
  name: r.name,
  runner_type: r.runner_type,
  status: r.status,
  endpoint: r.endpoint,
  headers: toJson(r.headers),
  tags: toTextArray(r.tags),
  comfyui: r.comfyui === null ? null : toJson(r.comfyui),
  created_at: toDate(r.created_at),
  updated_at: toDate(r.updated_at)
})

export const makePgManagedRunnerRepository = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const columns = sql.literal(COLUMNS)
  const decodeRunner = decodeFirst(ManagedRunnerRow)
  const decodeRunners = decodeRows(ManagedRunnerRow)

  return ManagedRunnerRepository.of({
    insert: (r) =>
      run(sql`INSERT INTO managed_runners ${sql.insert(columnsOf(r))}`).pipe(
        Effect.as(r),
        orStorageError("managed_runners.insert")
      ),
    findById: (id) =>
      isId(id)
        ? run(sql`SELECT ${columns} FROM managed_runners WHERE id = ${id}`).pipe(
          Effect.flatMap(decodeRunner),
          orStorageError("managed_runners.findById")
        )
        : Effect.succeedNone,
    update: (id, f) =>
      isId(id)
        ? updateRow(sql, {
          table: "managed_runners",
          id,
          select: sql`SELECT ${columns} FROM managed_runners WHERE id = ${id}`,
          decode: decodeRunner,
          columns: columnsOf,
          notFound: NotFound.managedRunner
        }, (current) => Result.succeed(f(current)))
        : Effect.fail(NotFound.managedRunner()),
    delete: (id) => deleteRow(sql, "managed_runners", id),
    setComfyUI: setComfyUIIn(sql, "managed_runners"),
    list: (query) => {
      const { limit, offset } = limitOffset(query)
      const where = sql.and([
        ...(query.types === undefined ? [] : [sql`runner_type = ANY(${query.types}::text[])`]),
        ...(query.status === undefined ? [] : [sql`status = ${query.status}`])
      ])
      return pageOf(
        "managed_runners.list",
        run(sql`SELECT ${columns} FROM managed_runners WHERE ${where}
          ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`).pipe(Effect.flatMap(decodeRunners)),
        sql`SELECT count(*)::int AS n FROM managed_runners WHERE ${where}`
      )
    },
    listActive: (types) =>
      run(sql`SELECT ${columns} FROM managed_runners WHERE status = 'active' AND runner_type = ANY(${types}::text[])
          ORDER BY created_at DESC, id DESC`).pipe(Effect.flatMap(decodeRunners), orStorageError("managed_runners.listActive"))
  })
})

/** `ManagedRunnerRepository` on the `SqlClient` in context. */
export const PgManagedRunnerRepository: Layer.Layer<ManagedRunnerRepository, never, SqlClient.SqlClient> = Layer.effect(
  ManagedRunnerRepository,
  makePgManagedRunnerRepository
)
