/**
 * Core's `AgentPresence` as `agent_presence` rows (migration 0036), one per agent runner: the
 * instance holding the agent's connection until `expires_at` (database time), and its latest
 * status. Taking a presence also takes the runner's lease (`runner_leases`) from the instance
 * that drives it, in the same transaction: its epoch moves on and the lease is left expired, so
 * that instance's next renewal finds nothing and it stops driving (PgRunnerOwnership.ts), and
 * this instance's dispatcher acquires the runner at its next look.
 */
import { AgentPresence, type AgentPresenceRecord, AgentStatus, presenceGuardedOwnership, RunnerOwnership } from "@wes/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as SqlClient from "effect/sql/SqlClient"
import { makePgRunnerOwnership, type PgRunnerOwnershipOptions } from "./PgRunnerOwnership.js"
import { isId, orStorageError, run, toJson, transaction } from "./Sql.js"

const Row = Schema.Struct({
  runner_id: Schema.String,
  owner: Schema.String,
  live: Schema.Boolean,
  status: Schema.NullOr(Schema.Unknown),
  reported_at: Schema.NullOr(Schema.String)
})

/** A status as stored; one that no longer decodes (an older agent's) reads as none. */
const decodeStatus = Schema.decodeUnknownOption(AgentStatus)

/** PostgreSQL spells UUIDs in lowercase, as `runner_leases` holds them (PgRunnerOwnership.ts). */
const keyOf = (runnerId: string) => (isId(runnerId) ? runnerId.toLowerCase() : runnerId)

export const makePgAgentPresence = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const until = (leaseMs: number) => sql`now() + ${Math.max(0, Math.round(leaseMs))}::float8 * interval '1 millisecond'`
  return AgentPresence.of({
    take: (runnerId, owner, leaseMs) => {
      const id = keyOf(runnerId)
      return Effect.gen(function*() {
        yield* run(sql`INSERT INTO agent_presence (runner_id, owner, expires_at) VALUES (${id}, ${owner}, ${until(leaseMs)})
          ON CONFLICT (runner_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at`)
        // Another instance's lease is ended (its renewal then fails); our own is left alone.
        yield* run(sql`UPDATE runner_leases SET owner = ${owner}, epoch = epoch + 1, expires_at = '-infinity'
          WHERE runner_id = ${id} AND owner <> ${owner}`)
      }).pipe(orStorageError("agent presence take"), transaction(sql, "agent presence take"))
    },
    renew: (runnerId, owner, leaseMs) =>
      run(sql<{ runner_id: string }>`UPDATE agent_presence SET expires_at = ${until(leaseMs)}
        WHERE runner_id = ${keyOf(runnerId)} AND owner = ${owner} RETURNING runner_id`).pipe(
        Effect.map((rows) => rows.length > 0),
        orStorageError("agent presence renewal")
      ),
    report: (runnerId, owner, status) =>
      run(sql`UPDATE agent_presence SET status = ${toJson(status)}::jsonb, reported_at = now()
        WHERE runner_id = ${keyOf(runnerId)} AND owner = ${owner}`).pipe(Effect.asVoid, orStorageError("agent status report")),
    release: (runnerId, owner) =>
      run(sql`UPDATE agent_presence SET expires_at = '-infinity'
        WHERE runner_id = ${keyOf(runnerId)} AND owner = ${owner}`).pipe(Effect.asVoid, orStorageError("agent presence release")),
    find: (runnerId) =>
      run(sql`SELECT runner_id, owner, expires_at > now() AS live, status,
          to_char(reported_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS reported_at
        FROM agent_presence WHERE runner_id = ${keyOf(runnerId)}`).pipe(
        Effect.flatMap((rows) => Schema.decodeUnknownEffect(Schema.Array(Row))(rows)),
        Effect.map((rows) =>
          Option.map(Option.fromUndefinedOr(rows[0]), (row): AgentPresenceRecord => ({
            ...row,
            status: row.status === null ? null : Option.getOrNull(decodeStatus(row.status))
          }))),
        orStorageError("agent presence read")
      )
  })
})

/** `AgentPresence` on the `SqlClient` in context. */
export const PgAgentPresence: Layer.Layer<AgentPresence, never, SqlClient.SqlClient> = Layer.effect(AgentPresence, makePgAgentPresence)

/**
 * The runner leases (PgRunnerOwnership.ts) that leave a runner to the instance its agent is
 * connected to, with the presence they read: what the store provides.
 */
export const layerPgAgentOwnership = (
  options: PgRunnerOwnershipOptions = {}
): Layer.Layer<RunnerOwnership | AgentPresence, never, SqlClient.SqlClient> =>
  Layer.effectContext(Effect.gen(function*() {
    const presence = yield* makePgAgentPresence
    const ownership = yield* makePgRunnerOwnership(options)
    return Context.make(AgentPresence, presence).pipe(Context.add(RunnerOwnership, presenceGuardedOwnership(ownership, presence)))
  }))
