/** Core's `Transactor` as a PostgreSQL transaction (a savepoint when one is already open). */
import * as SqlClient from "@effect/sql/SqlClient"
import { Transactor } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { transaction } from "./Sql.js"

/**
 * Every repository call inside `withTransaction` runs on the transaction's connection; NOTIFYs
 * of published events are delivered at COMMIT, and nothing of a failed effect is written.
 */
export const PgTransactor: Layer.Layer<Transactor, never, SqlClient.SqlClient> = Layer.effect(
  Transactor,
  Effect.map(SqlClient.SqlClient, (sql) => {
    const run = transaction(sql, "transaction")
    return Transactor.of({ withTransaction: (effect) => run(effect) })
  })
)
