/** Templates in PostgreSQL. */
import * as SqlClient from "effect/sql/SqlClient"
import { LimitReached, NotFound, Template, TemplateListItem, TemplateRepository } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
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
  updateRow
} from "./Sql.js"

const timestamps = { created_at: DbTimestamp, updated_at: DbTimestamp }
const TemplateRow = Schema.Struct({ ...Template.fields, ...timestamps })
const ListItemRow = Schema.Struct({ ...TemplateListItem.fields, ...timestamps })

const columnsOf = (t: Template) => ({
  id: t.id,
  user_id: t.user_id,
  name: t.name,
  description: t.description,
  body: toJson(t.body),
  created_at: toDate(t.created_at),
  updated_at: toDate(t.updated_at)
})

export const makePgTemplateRepository = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const decodeTemplate = decodeFirst(TemplateRow)

  const selectOwned = (userId: string, id: string) =>
    sql`SELECT id, user_id, name, description, body, created_at, updated_at FROM templates
      WHERE id = ${id} AND user_id = ${userId}`
  const findForUser = (userId: string, id: string) =>
    isId(userId) && isId(id)
      ? run(selectOwned(userId, id)).pipe(Effect.flatMap(decodeTemplate), orStorageError("templates.find"))
      : Effect.succeedNone

  return TemplateRepository.of({
    insert: (t, limit) =>
      insertWithinLimit(sql, {
        table: "templates",
        userId: t.user_id,
        limit,
        onLimit: () => new LimitReached({ limit: "templates" }),
        insert: run(sql`INSERT INTO templates ${sql.insert(columnsOf(t))}`).pipe(
          Effect.asVoid,
          orStorageError("templates.insert")
        )
      }).pipe(Effect.as(t)),
    findForUser,
    update: (userId, id, f) =>
      isId(userId) && isId(id)
        ? updateRow(sql, {
          table: "templates",
          id,
          select: selectOwned(userId, id),
          decode: decodeTemplate,
          columns: columnsOf,
          notFound: NotFound.template
        }, (current) => Result.succeed(f(current)))
        : Effect.fail(NotFound.template()),
    delete: (userId, id) => deleteRow(sql, "templates", id, userId),
    list: (userId, page) => {
      if (!isId(userId)) return Effect.succeed({ items: [], total: 0 })
      const { limit, offset } = limitOffset(page)
      return pageOf(
        "templates.list",
        run(sql`SELECT id, user_id, name, description, created_at, updated_at FROM templates
          WHERE user_id = ${userId} ORDER BY created_at DESC, id DESC LIMIT ${limit} OFFSET ${offset}`).pipe(
          Effect.flatMap(decodeRows(ListItemRow))
        ),
        sql`SELECT count(*)::int AS n FROM templates WHERE user_id = ${userId}`
      )
    },
    count: (userId) =>
      isId(userId)
        ? run(sql`SELECT count(*)::int AS n FROM templates WHERE user_id = ${userId}`).pipe(
          Effect.flatMap(readCount),
          orStorageError("templates.count")
        )
        : Effect.succeed(0)
  })
})

/** `TemplateRepository` on the `SqlClient` in context. */
export const PgTemplateRepository: Layer.Layer<TemplateRepository, never, SqlClient.SqlClient> = Layer.effect(
  TemplateRepository,
  makePgTemplateRepository
)
