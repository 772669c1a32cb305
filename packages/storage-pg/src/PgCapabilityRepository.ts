/**
 * Runners' capabilities in PostgreSQL (`runner_capabilities`, migration 0013). The row schema
 * (Tables.ts) is core's `StoredCapabilities` with a `timestamptz` and a `jsonb`; it names the
 * columns and encodes and decodes every row.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { CapabilityRepository, ManagedRunnerId, RunnerId } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { decodeRows, isId, orStorageError, run, toDate } from "./Sql.js"
import { tableOn } from "./Table.js"
import { capabilities } from "./Tables.js"

const DueRow = Schema.Union([Schema.Struct({ kind: Schema.Literal("user"), id: RunnerId }),
  Schema.Struct({ kind: Schema.Literal("managed"), id: ManagedRunnerId })])

export const makePgCapabilityRepository = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = tableOn(sql, capabilities)
  const decodeDue = decodeRows(DueRow)

  return CapabilityRepository.of({
    put: (record) =>
      t.insert(
        record,
        sql`ON CONFLICT (runner_id) DO UPDATE SET runner_kind = EXCLUDED.runner_kind, summary = EXCLUDED.summary,
            hash = EXCLUDED.hash, read_at = EXCLUDED.read_at
          WHERE runner_capabilities.read_at <= EXCLUDED.read_at`
      ).pipe(Effect.asVoid, orStorageError("runner_capabilities.put")),
    get: (runnerId) =>
      isId(runnerId)
        ? t.findOne("runner_capabilities.get", sql`runner_id = ${runnerId}`)
        : Effect.succeedNone,
    remove: (runnerId) =>
      isId(runnerId)
        ? run(sql`DELETE FROM runner_capabilities WHERE runner_id = ${runnerId}`).pipe(
          Effect.asVoid,
          orStorageError("runner_capabilities.remove")
        )
        : Effect.void,
    due: (before, limit) =>
      run(sql`SELECT kind, id FROM (
          SELECT 'user' AS kind, r.id::text AS id, c.read_at FROM runners r
            LEFT JOIN runner_capabilities c ON c.runner_id = r.id WHERE r.status = 'active'
          UNION ALL
          SELECT 'managed', m.id::text, c.read_at FROM managed_runners m
            LEFT JOIN runner_capabilities c ON c.runner_id = m.id WHERE m.status = 'active'
        ) t WHERE read_at IS NULL OR read_at < ${toDate(before)}
        ORDER BY read_at NULLS FIRST, id LIMIT ${Math.max(0, limit)}`).pipe(
        Effect.flatMap(decodeDue),
        orStorageError("runner_capabilities.due")
      )
  })
})

/** `CapabilityRepository` on the `SqlClient` in context. */
export const PgCapabilityRepository: Layer.Layer<CapabilityRepository, never, SqlClient.SqlClient> = Layer.effect(
  CapabilityRepository,
  makePgCapabilityRepository
)
