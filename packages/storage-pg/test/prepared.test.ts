import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "effect/unstable/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { MAX_PREPARED, PLANNED_EACH_RUN, preparingClient } from "../src/PgPool.js"
import { DATABASE_URL, freshSchema, storeOn } from "./harness.js"

/** The statements prepared on the connection a transaction holds, after running `text` `times` times on it. */
const preparedAfter = (times: number, preparedStatements?: boolean, planEachRun = false) =>
  Effect.gen(function*() {
    const schema = yield* freshSchema
    const context = yield* Layer.build(storeOn(schema, { preparedStatements }))
    const sql = yield* Effect.provide(SqlClient.SqlClient, context)
    return yield* sql.withTransaction(Effect.gen(function*() {
      const answers: Array<number> = []
      const marker = sql.literal(planEachRun ? PLANNED_EACH_RUN : "")
      for (let i = 0; i < times; i++) answers.push((yield* sql<{ n: number }>`${marker}SELECT ${i}::int + 1 AS n`)[0]!.n)
      const prepared = yield* sql<{ statement: string }>`SELECT statement FROM pg_prepared_statements WHERE statement LIKE ${"%SELECT $1::int + 1%"}`
      return { answers, prepared: prepared.map((r) => r.statement) }
    }))
  })

describe("prepared statements", () => {
  it.scoped("a statement run again is prepared on its connection and answers as before", () =>
    Effect.gen(function*() {
      const once = yield* preparedAfter(1)
      expect(once).toEqual({ answers: [1], prepared: [] })
      const thrice = yield* preparedAfter(3)
      expect(thrice.answers).toEqual([1, 2, 3])
      expect(thrice.prepared).toEqual(["SELECT $1::int + 1 AS n"])
    }))

  it.scoped("a statement marked to be planned at each run is never prepared", () =>
    Effect.gen(function*() {
      expect(yield* preparedAfter(3, true, true)).toEqual({ answers: [1, 2, 3], prepared: [] })
    }))

  it.scoped("are off with preparedStatements: false (a pooler without sessions)", () =>
    Effect.gen(function*() {
      expect(yield* preparedAfter(3, false)).toEqual({ answers: [1, 2, 3], prepared: [] })
    }))

  it("name at most MAX_PREPARED texts per process; the rest run unnamed", async () => {
    const Client = preparingClient()
    const client = new Client({ connectionString: DATABASE_URL })
    await client.connect()
    try {
      const run = (text: string) => new Promise<void>((resolve, reject) => client.query(text, [1], (e: Error | null) => (e ? reject(e) : resolve())))
      for (let i = 0; i < MAX_PREPARED + 20; i++) for (let k = 0; k < 2; k++) await run(`SELECT $1::int + ${i}`)
      const count = await client.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_prepared_statements")
      expect(count.rows[0]!.n).toBe(MAX_PREPARED)
    } finally {
      await client.end()
    }
  }, 60_000)
})
