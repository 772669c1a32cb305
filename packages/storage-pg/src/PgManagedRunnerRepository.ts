/** Operator-managed runners in PostgreSQL. */
import * as SqlClient from "effect/sql/SqlClient"
import { ManagedRunnerNotFound, ManagedRunnerRepository } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { deleteRow, isId, orStorageError } from "./Sql.js"
import { setComfyUIIn } from "./PgRunnerRepository.js"
import { NEWEST_FIRST, tableOn } from "./Table.js"
import { managedRunners } from "./Tables.js"

export const makePgManagedRunnerRepository = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = tableOn(sql, managedRunners)

  return ManagedRunnerRepository.of({
    insert: (r) => t.insert(r).pipe(Effect.as(r), orStorageError("managed_runners.insert")),
    findById: (id) =>
      isId(id) ? t.findOne("managed_runners.findById", sql`id = ${id}`) : Effect.succeedNone,
    update: (id, changes) =>
      isId(id) ? t.update("managed_runners.update", sql`id = ${id}`, changes, () => new ManagedRunnerNotFound()) : Effect.fail(new ManagedRunnerNotFound()),
    delete: (id) => deleteRow(sql, "managed_runners", id),
    setComfyUI: setComfyUIIn(sql, "managed_runners"),
    list: (query) =>
      t.page(
        "managed_runners.list",
        sql.and([
          ...(query.types === undefined ? [] : [sql`runner_type = ANY(${query.types}::text[])`]),
          ...(query.status === undefined ? [] : [sql`status = ${query.status}`])
        ]),
        query
      ),
    listActive: (types) =>
      t.findAll("managed_runners.listActive", sql`status = 'active' AND runner_type = ANY(${types}::text[])`, NEWEST_FIRST)
  })
})

/** `ManagedRunnerRepository` on the `SqlClient` in context. */
export const PgManagedRunnerRepository: Layer.Layer<ManagedRunnerRepository, never, SqlClient.SqlClient> = Layer.effect(
  ManagedRunnerRepository,
  makePgManagedRunnerRepository
)
