/** Templates in PostgreSQL. */
import * as SqlClient from "effect/sql/SqlClient"
import { TemplateNotFound, TemplateRepository } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { countOwned, deleteRow, insertWithinLimit, isId, orStorageError } from "./Sql.js"
import { tableOn } from "./Table.js"
import { templateItems, templates } from "./Tables.js"

export const makePgTemplateRepository = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = tableOn(sql, templates)
  const items = tableOn(sql, templateItems)
  const owned = (userId: string, id: string) => sql`id = ${id} AND user_id = ${userId}`

  return TemplateRepository.of({
    insert: (template, limit) =>
      insertWithinLimit(sql, "templates", template.user_id, limit, t.insert(template).pipe(orStorageError("templates.insert")))
        .pipe(Effect.as(template)),
    findForUser: (userId, id) =>
      isId(userId) && isId(id) ? t.findOne("templates.find", owned(userId, id)) : Effect.succeedNone,
    update: (userId, id, changes) =>
      isId(userId) && isId(id) ? t.update("templates.update", owned(userId, id), changes, () => new TemplateNotFound()) : Effect.fail(new TemplateNotFound()),
    delete: (userId, id) => deleteRow(sql, "templates", id, userId),
    list: (userId, page) =>
      isId(userId) ? items.page("templates.list", sql`user_id = ${userId}`, page) : Effect.succeed({ items: [], total: 0 }),
    count: (userId) => countOwned(sql, "templates", userId)
  })
})

/** `TemplateRepository` on the `SqlClient` in context. */
export const PgTemplateRepository: Layer.Layer<TemplateRepository, never, SqlClient.SqlClient> = Layer.effect(
  TemplateRepository,
  makePgTemplateRepository
)
