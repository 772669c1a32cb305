/**
 * Runner tokens in PostgreSQL (`runner_agent_tokens`, migration 0035): hashes only, looked up by
 * hash, deleted with their runner by the foreign key. An insert locks its runner's row, so the
 * count of live tokens and the insert are one step against concurrent inserts (and a delete).
 */
import { RunnerTokenRepository } from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as SqlClient from "effect/sql/SqlClient"
import { isId, orStorageError, readCount, run, transaction } from "./Sql.js"
import { NEWEST_FIRST, tableOn } from "./Table.js"
import { runnerTokens } from "./Tables.js"

export const makePgRunnerTokenRepository = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const t = tableOn(sql, runnerTokens)

  return RunnerTokenRepository.of({
    insert: (token, liveLimit) =>
      transaction(sql, "runner_agent_tokens.insert")(Effect.gen(function*() {
        const runner = yield* run(sql`SELECT 1 FROM runners WHERE id = ${token.runner_id} FOR NO KEY UPDATE`).pipe(
          orStorageError("runner_agent_tokens.insert (runner)")
        )
        if (runner.length === 0) return "runner_gone" as const
        const live = yield* run(sql`SELECT count(*)::int AS n FROM runner_agent_tokens
            WHERE runner_id = ${token.runner_id} AND revoked_at IS NULL`).pipe(
          Effect.flatMap(readCount),
          orStorageError("runner_agent_tokens.insert (count)")
        )
        if (live >= liveLimit) return "limit_reached" as const
        yield* t.insert(token).pipe(orStorageError("runner_agent_tokens.insert"))
        return "inserted" as const
      })),
    findByHash: (hash) => t.findOne("runner_agent_tokens.findByHash", sql`token_hash = ${hash}`),
    findById: (id) => isId(id) ? t.findOne("runner_agent_tokens.findById", sql`id = ${id}`) : Effect.succeedNone,
    list: (runnerId) =>
      isId(runnerId) ? t.findAll("runner_agent_tokens.list", sql`runner_id = ${runnerId}`, NEWEST_FIRST) : Effect.succeed([]),
    revoke: (runnerId, id, at, keepRevoked) =>
      !isId(runnerId) || !isId(id)
        ? Effect.succeedNone
        : Effect.gen(function*() {
          const revoked = yield* run(sql`UPDATE runner_agent_tokens SET revoked_at = coalesce(revoked_at, ${DateTime.toDateUtc(at)})
              WHERE id = ${id} AND runner_id = ${runnerId} RETURNING ${t.columns}`).pipe(
            Effect.flatMap(t.decodeFirst),
            orStorageError("runner_agent_tokens.revoke")
          )
          yield* run(sql`DELETE FROM runner_agent_tokens WHERE runner_id = ${runnerId} AND revoked_at IS NOT NULL
              AND id NOT IN (SELECT id FROM runner_agent_tokens WHERE runner_id = ${runnerId} AND revoked_at IS NOT NULL
                ORDER BY revoked_at DESC, id DESC LIMIT ${keepRevoked})`).pipe(orStorageError("runner_agent_tokens.prune"))
          return revoked
        }),
    recordUse: (id, at) =>
      isId(id)
        ? run(sql`UPDATE runner_agent_tokens SET last_used_at = GREATEST(last_used_at, ${DateTime.toDateUtc(at)}) WHERE id = ${id}`).pipe(
          Effect.asVoid,
          orStorageError("runner_agent_tokens.recordUse")
        )
        : Effect.void
  })
})

/** `RunnerTokenRepository` on the `SqlClient` in context. */
export const PgRunnerTokenRepository: Layer.Layer<RunnerTokenRepository, never, SqlClient.SqlClient> = Layer.effect(
  RunnerTokenRepository,
  makePgRunnerTokenRepository
)
