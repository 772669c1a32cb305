import { describe, expect, it } from "@effect/vitest"
import { PgClient } from "@effect/sql-pg"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as SqlClient from "effect/sql/SqlClient"
import { makePgClient, MAX_PREPARED, runPlannedEachRun } from "../src/PgPool.js"
import { DATABASE_URL, freshSchema, storeOn } from "./harness.js"

/** The statements prepared on the connection a transaction holds, after running `text` `times` times on it. */
const preparedAfter = (times: number, preparedStatements?: boolean, planEachRun = false) =>
  Effect.gen(function*() {
    const schema = yield* freshSchema
    const context = yield* Layer.build(storeOn(schema, { preparedStatements }))
    const sql = yield* Effect.provide(SqlClient.SqlClient, context)
    return yield* sql.withTransaction(Effect.gen(function*() {
      const answers: Array<number> = []
      for (let i = 0; i < times; i++) {
        const statement = sql<{ n: number }>`SELECT ${i}::int + 1 AS n`
        const rows = planEachRun ? yield* runPlannedEachRun(statement, ["n"]) : yield* statement
        answers.push(Number(rows[0]!.n))
      }
      const prepared = yield* sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements WHERE statement LIKE ${"%SELECT $1::int + 1%"}`
      return { answers, prepared: prepared.map((r) => r.statement) }
    }))
  })

describe("prepared statements", () => {
  it.effect("a statement is prepared on its connection at its first run, once, and answers as before", () =>
    Effect.gen(function*() {
      const once = yield* preparedAfter(1)
      expect(once).toEqual({ answers: [1], prepared: ["SELECT $1::int + 1 AS n"] })
      const thrice = yield* preparedAfter(3)
      expect(thrice.answers).toEqual([1, 2, 3])
      expect(thrice.prepared).toEqual(["SELECT $1::int + 1 AS n"])
    }))

  it.effect("a statement planned at each run (runPlannedEachRun) is never prepared", () =>
    Effect.gen(function*() {
      expect(yield* preparedAfter(3, true, true)).toEqual({ answers: [1, 2, 3], prepared: [] })
    }))

  it.effect("are off with preparedStatements: false (a pooler without sessions)", () =>
    Effect.gen(function*() {
      expect(yield* preparedAfter(3, false)).toEqual({ answers: [1, 2, 3], prepared: [] })
    }))

  it.live("a connection keeps at most MAX_PREPARED statements prepared; the least recently used are closed", () =>
    Effect.gen(function*() {
      const count = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
        // One transaction: every statement on one connection.
        sql.withTransaction(Effect.gen(function*() {
          for (let i = 0; i < MAX_PREPARED + 20; i++) for (let k = 0; k < 2; k++) yield* sql.unsafe(`SELECT $1::int + ${i}`, [1])
          return (yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_prepared_statements`)[0]!.n
        }))).pipe(
          Effect.provide(PgClient.layerFrom(makePgClient({ url: Redacted.make(DATABASE_URL), maxConnections: 1 })))
        )
      expect(count).toBe(MAX_PREPARED)
    }), 60_000)
})
