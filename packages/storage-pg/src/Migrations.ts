/**
 * The schema, as ordered migrations run by `effect/sql`'s Migrator at start. They are
 * imported as modules and loaded with `fromRecord`, so a bundled build carries them.
 */
import { StorageError } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Migrator from "effect/sql/Migrator"
import * as SqlClient from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import m0001 from "./migrations/0001_users.js"
import m0002 from "./migrations/0002_workflows.js"
import m0003 from "./migrations/0003_workflow_outputs.js"
import m0004 from "./migrations/0004_templates.js"
import m0005 from "./migrations/0005_runners.js"
import m0006 from "./migrations/0006_managed_runners.js"
import m0007 from "./migrations/0007_workflow_events.js"
import m0008 from "./migrations/0008_blobs.js"
import m0009 from "./migrations/0009_workflow_claims.js"
import m0010 from "./migrations/0010_runner_leases.js"
import m0011 from "./migrations/0011_workflow_quotas.js"
import m0012 from "./migrations/0012_scheduling.js"
import m0013 from "./migrations/0013_runner_capabilities.js"
import m0020 from "./migrations/0020_json_as_sent.js"
import m0021 from "./migrations/0021_webhooks.js"
import m0030 from "./migrations/0030_transfer_time.js"
import m0031 from "./migrations/0031_runner_comfyui.js"
import m0032 from "./migrations/0032_workflow_previews.js"
import m0033 from "./migrations/0033_blob_key_prefix.js"
import m0034 from "./migrations/0034_retention.js"
import m0035 from "./migrations/0035_runner_agent.js"
import m0036 from "./migrations/0036_agent_presence.js"
import m0037 from "./migrations/0037_models.js"
import { orStorageError, run, storageError, transaction } from "./Sql.js"

/** Every migration by `<id>_<name>`; ids only grow, and a released migration never changes. */
export const migrations: Record<string, Effect.Effect<void, SqlError, SqlClient.SqlClient>> = {
  "0001_users": m0001,
  "0002_workflows": m0002,
  "0003_workflow_outputs": m0003,
  "0004_templates": m0004,
  "0005_runners": m0005,
  "0006_managed_runners": m0006,
  "0007_workflow_events": m0007,
  "0008_blobs": m0008,
  "0009_workflow_claims": m0009,
  "0010_runner_leases": m0010,
  "0011_workflow_quotas": m0011,
  "0012_scheduling": m0012,
  "0013_runner_capabilities": m0013,
  "0020_json_as_sent": m0020,
  "0021_webhooks": m0021,
  "0030_transfer_time": m0030,
  "0031_runner_comfyui": m0031,
  "0032_workflow_previews": m0032,
  "0033_blob_key_prefix": m0033,
  "0034_retention": m0034,
  "0035_runner_agent": m0035,
  "0036_agent_presence": m0036,
  "0037_models": m0037
}

/** The Migrator's bookkeeping table (in the schema the connection's search_path selects). */
export const MIGRATIONS_TABLE = "effect_sql_migrations"

const migrationFailed = (e: Migrator.MigrationError): StorageError =>
  isSqlError(e.cause)
    ? storageError(`migrations: ${e.message}`)(e.cause)
    : new StorageError({ message: `PostgreSQL store: migrations failed: ${e.message}`, cause: e })

/**
 * Applies those of `record`'s migrations not applied yet; returns them (`[id, name]`).
 *
 * Safe when several instances start at once: everything runs in one transaction that first
 * takes an advisory lock for the current schema, so the others wait and then find nothing to
 * do; a failing migration rolls back the whole run. The bookkeeping table is created here under
 * that lock (before the lock, two instances' Migrators could race to create it).
 */
export const migrateWith = (
  record: Record<string, Effect.Effect<void, SqlError, SqlClient.SqlClient>>
): Effect.Effect<ReadonlyArray<readonly [id: number, name: string]>, StorageError, SqlClient.SqlClient> => {
  const migrate = Migrator.make({})({ loader: Migrator.fromRecord(record), table: MIGRATIONS_TABLE })
  return Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* transaction(sql, "migrations")(Effect.gen(function*() {
      yield* run(sql`SELECT pg_advisory_xact_lock(hashtext('wes:migrations:' || current_schema()))`).pipe(
        orStorageError("migration lock")
      )
      yield* run(sql`CREATE TABLE IF NOT EXISTS ${sql(MIGRATIONS_TABLE)} (
        migration_id integer PRIMARY KEY,
        created_at timestamptz NOT NULL DEFAULT now(),
        name text NOT NULL
      )`).pipe(orStorageError("migrations table"))
      // A failing migration is a `MigrationError` (Effect 3's Migrator made it a defect).
      return yield* migrate.pipe(
        Effect.mapError((e) => isSqlError(e) ? storageError("migrations")(e) : migrationFailed(e))
      )
    }))
  })
}

/** Applies this package's migrations (see `migrateWith`). */
export const runMigrations = migrateWith(migrations)

/** Runs the migrations when the layer is built. */
export const PgMigrationsLive: Layer.Layer<never, StorageError, SqlClient.SqlClient> = Layer.effectDiscard(runMigrations)
