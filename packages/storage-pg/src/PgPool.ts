/**
 * The store's connection pool: `@effect/sql-pg`'s own (its native wire client), with WES's
 * settings. PostgreSQL parses and plans an unnamed statement every time it runs; for WES's
 * larger statements (a batch of transitions, a claim in scheduling order, a runner's load) that
 * costs more than running them: PostgreSQL's statement log showed 1.5-3.6 ms to bind (plan)
 * against 0.3-0.5 ms to execute. The client prepares each statement on its connection and runs it
 * by name afterwards (its first run costs no extra round trip: Parse travels with Bind and
 * Execute). Bounded: each connection keeps at most `MAX_PREPARED` statements (WES's own SQL has
 * about a hundred), the least recently used closed first. Off (`preparedStatements: false`) for
 * a pooler that does not keep a session per client (PgBouncer in transaction mode before 1.21).
 *
 * A statement whose best plan depends on the data at the time runs unprepared instead
 * (`runPlannedEachRun`): PostgreSQL plans it at each run, with its parameters' values.
 */
import { PgClient } from "@effect/sql-pg"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Reactivity from "effect/reactivity/Reactivity"
import type * as Scope from "effect/Scope"
import type { SqlError } from "effect/sql/SqlError"
import type * as Statement from "effect/sql/Statement"

/** Most statements a connection keeps prepared. */
export const MAX_PREPARED = 500

/** How long a pooled connection may stay idle before the pool closes it (node-postgres's default, kept). */
export const DEFAULT_IDLE_TIMEOUT = Duration.seconds(10)

/**
 * Runs `statement` unprepared, without the client's name transforms: PostgreSQL plans it at each
 * run with its parameters' values. For a statement whose generic plan is slow (the webhook claim:
 * its generic plan, made once, ran 2-3x slower in B10 than a plan per run). `columns` are the
 * statement's result columns, in order: its rows come back keyed by them.
 */
export const runPlannedEachRun = (
  statement: Statement.Statement<object>,
  columns: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<Record<string, unknown>>, SqlError> =>
  Effect.map(statement.valuesUnprepared, (rows) => rows.map((values) => Object.fromEntries(columns.map((c, i) => [c, values[i]]))))

export interface PgPoolConfig extends
  Omit<
    PgClient.PgPoolConfig,
    "transformResultNames" | "transformQueryNames" | "transformJson" | "types" | "prepare" | "preparedStatementCacheSize"
  >
{
  /** Prepared statements (default true); false for a pooler without sessions. */
  readonly preparedStatements?: boolean | undefined
}

/**
 * A `PgClient` (and `SqlClient`) on a pool of this config, checked with one query before it is
 * handed out: a database that cannot be reached fails here, at start, not at the first request.
 */
export const makePgClient = (
  config: PgPoolConfig
): Effect.Effect<PgClient.PgClient, SqlError, Scope.Scope | Reactivity.Reactivity> => {
  const { preparedStatements, ...options } = config
  return Effect.tap(
    PgClient.make({
      ...options,
      idleTimeout: options.idleTimeout ?? DEFAULT_IDLE_TIMEOUT,
      prepare: preparedStatements !== false,
      preparedStatementCacheSize: MAX_PREPARED
    }),
    (client) => client`SELECT 1`.unprepared
  )
}
