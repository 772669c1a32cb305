/**
 * Test harness: every test file (and every store built here) works in its own fresh schema of
 * the real PostgreSQL named by DATABASE_URL, dropped afterwards, so files run in parallel and
 * reruns start empty.
 */
import * as SqlClient from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import type { StorageError, StoreServices } from "@wes/core"
import { type PgStoreConfig, PgStoreLive } from "@wes/storage-pg"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"

export const DATABASE_URL = process.env["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"

/** The database URL with `search_path` set to `schema` for every connection (pool and LISTEN). */
export const urlFor = (schema: string): Redacted.Redacted => {
  const url = new URL(DATABASE_URL)
  url.searchParams.set("options", `-c search_path=${schema}`)
  return Redacted.make(url.toString())
}

/** Runs `f` on a short-lived connection to the database (outside any test schema). */
export const admin = <A>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, SqlError>): Effect.Effect<A, SqlError> =>
  Effect.flatMap(SqlClient.SqlClient, f).pipe(
    Effect.provide(PgClient.layer({ url: Redacted.make(DATABASE_URL), maxConnections: 1, applicationName: "wes-test-admin" }))
  )

/** A new empty schema, dropped with everything in it when the scope closes. */
export const freshSchema: Effect.Effect<string, SqlError, Scope.Scope> = Effect.acquireRelease(
  Effect.gen(function*() {
    const name = `wes_test_${globalThis.crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`
    yield* admin((sql) => sql`CREATE SCHEMA ${sql(name)}`)
    return name
  }),
  (name) => admin((sql) => sql`DROP SCHEMA ${sql(name)} CASCADE`).pipe(Effect.orDie)
)

/** A client (own pool) whose connections use `schema`. */
export const clientFor = (schema: string, options: { readonly applicationName?: string } = {}) =>
  PgClient.layer({ url: urlFor(schema), maxConnections: 4, applicationName: options.applicationName ?? "wes-test" })

/** A store on `schema` with its own pool and LISTEN connection. */
export const storeOn = (schema: string, config: Omit<PgStoreConfig, "url"> = {}) =>
  PgStoreLive({ ...config, url: urlFor(schema) })

/** A store on a fresh schema, which is dropped when the layer is released. */
export const freshStore = (
  config: Omit<PgStoreConfig, "url"> = {}
): Layer.Layer<StoreServices | PgClient.PgClient | SqlClient.SqlClient, StorageError | SqlError> =>
  Layer.unwrap(Effect.map(freshSchema, (schema) => storeOn(schema, config)))

/** The backend pids of the LISTEN connection of the store started with this application name. */
export const listenerPids = (applicationName: string) =>
  admin((sql) =>
    sql<{ pid: number }>`SELECT pid FROM pg_stat_activity
      WHERE application_name = ${applicationName} AND query ILIKE 'LISTEN%'`
  ).pipe(Effect.map((rows) => rows.map((r) => r.pid)))

/** Waits until the store's LISTEN connection exists (other than `not`). */
export const awaitListener = (applicationName: string, not?: number) =>
  listenerPids(applicationName).pipe(
    Effect.flatMap((pids) => {
      const pid = pids.find((p) => p !== not)
      return pid === undefined ? Effect.fail("no listener yet" as const) : Effect.succeed(pid)
    }),
    Effect.retry(Schedule.spaced("50 millis").pipe(Schedule.upTo({ duration: "10 seconds" })))
  )
