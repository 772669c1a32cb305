import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import { migrateWith, MIGRATIONS_TABLE, migrations, PgStoreLive, runMigrations } from "@wes/storage-pg"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { admin, clientFor, freshSchema, storeOn } from "./harness.js"

const allIds = Object.keys(migrations).map((k) => Number(k.slice(0, 4)))

const tablesOf = (schema: string) =>
  admin((sql) =>
    sql<{ table_name: string }>`SELECT table_name FROM information_schema.tables WHERE table_schema = ${schema} ORDER BY 1`
  ).pipe(Effect.map((rows) => rows.map((r) => r.table_name)))

describe("migrations", () => {
  it.live("apply in order on an empty schema, and a second run finds nothing to do", () =>
    Effect.gen(function*() {
      const schema = yield* freshSchema
      const first = yield* runMigrations.pipe(Effect.provide(clientFor(schema)))
      expect(first.map(([id]) => id)).toEqual(allIds)
      expect(yield* tablesOf(schema)).toEqual([
        "agent_presence",
        "api_tokens",
        "blob_chunks",
        "blobs",
        MIGRATIONS_TABLE,
        "managed_runners",
        "runner_agent_tokens",
        "runner_capabilities",
        "runner_leases",
        "runners",
        "templates",
        "users",
        "webhook_deliveries",
        "webhook_endpoints",
        "workflow_event_heads",
        "workflow_events",
        "workflow_outputs",
        "workflow_previews",
        "workflow_quotas",
        "workflows"
      ])
      const second = yield* runMigrations.pipe(Effect.provide(clientFor(schema)))
      expect(second).toEqual([])
      const indexes = yield* admin((sql) =>
        sql<{ indexname: string }>`SELECT indexname FROM pg_indexes WHERE schemaname = ${schema} AND tablename = 'workflows'`
      )
      expect(indexes.map((i) => i.indexname).sort()).toEqual([
        "workflows_active_user_idx",
        "workflows_events_kept_idx",
        "workflows_in_flight_managed_runner_idx",
        "workflows_in_flight_user_runner_idx",
        "workflows_managed_runner_history_idx",
        "workflows_pkey",
        "workflows_retention_due_idx",
        "workflows_submitted_runner_idx",
        "workflows_user_created_idx",
        "workflows_user_idempotency_key",
        "workflows_user_runner_history_idx",
        "workflows_user_status_created_idx",
        "workflows_waiting_runner_user_idx"
      ])
    }))

  it.live("two instances migrating one fresh schema at once both succeed, and it is migrated once", () =>
    Effect.gen(function*() {
      const schema = yield* freshSchema
      const [a, b] = yield* Effect.all([
        runMigrations.pipe(Effect.provide(clientFor(schema, { applicationName: "wes-test-migrate-a" }))),
        runMigrations.pipe(Effect.provide(clientFor(schema, { applicationName: "wes-test-migrate-b" })))
      ], { concurrency: 2 })
      expect([...a, ...b].map(([id]) => id).sort((x, y) => x - y)).toEqual(allIds)
      expect(Math.min(a.length, b.length)).toBe(0)
      const recorded = yield* admin((sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM ${sql(schema)}.${sql(MIGRATIONS_TABLE)}`)
      expect(recorded[0]?.n).toBe(allIds.length)
    }))

  it.live("two stores starting at once on one fresh schema both start", () =>
    Effect.gen(function*() {
      const schema = yield* freshSchema
      yield* Effect.all([
        Layer.build(storeOn(schema, { applicationName: "wes-test-start-a" })),
        Layer.build(storeOn(schema, { applicationName: "wes-test-start-b" }))
      ], { concurrency: 2 })
      expect(yield* tablesOf(schema)).toContain("workflows")
    }))

  it.live("a store that cannot reach the database fails to start with StorageError", () =>
    Effect.gen(function*() {
      const error = yield* Layer.build(PgStoreLive({
        url: Redacted.make("postgres://postgres@127.0.0.1:1/test"),
        connectTimeout: "2 seconds"
      })).pipe(Effect.flip)
      expect(error._tag).toBe("StorageError")
      expect(error.message).toMatch(/^PostgreSQL store: connect failed/)
    }))
})

describe("a failing migration", () => {
  it.live("fails the run with StorageError and leaves nothing behind", () =>
    Effect.gen(function*() {
      const schema = yield* freshSchema
      const broken = {
        "0001_fine": Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE fine (id int)`),
        "0002_broken": Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE TABLE broken (`)
      }
      const error = yield* migrateWith(broken).pipe(Effect.provide(clientFor(schema)), Effect.flip)
      expect(error._tag).toBe("StorageError")
      expect(error.message).toContain(`Migration "2_broken" failed`)
      expect(error.message).toContain("SQLSTATE 42601")
      expect(yield* tablesOf(schema)).toEqual([])
    }))
})
