/**
 * The store's connection pool, with prepared statements. PostgreSQL parses and plans an unnamed
 * statement every time it runs; for WES's larger statements (a batch of transitions, a claim in
 * scheduling order, a runner's load) that costs more than running them: PostgreSQL's statement
 * log showed 1.5-3.6 ms to bind (plan) against 0.3-0.5 ms to execute. So the pool's connections
 * name every parameterised statement from the second time its text is seen: each connection
 * prepares it once and runs it by name afterwards, as the PostgreSQL driver does by itself when
 * given a name. Bounded: at most `MAX_PREPARED` texts get a name per pool (WES's own SQL has
 * about a hundred); the rest run unnamed. Off (`preparedStatements: false`) for a pooler that
 * does not keep a session per client (PgBouncer in transaction mode before 1.21).
 *
 * The rest is `@effect/sql-pg`'s own pool of `PgClient.layer`, built here because that layer
 * offers no way to choose the driver's client class.
 */
import { SqlError } from "effect/unstable/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import Pg from "pg"

/** Most statement texts given a name, per pool. */
export const MAX_PREPARED = 500

/**
 * A statement that starts with this comment is never prepared: PostgreSQL plans it at every run,
 * with its parameters' values. For a statement whose best plan depends on the data at the time
 * (the webhook claim: its generic plan, made once, ran 2-3x slower in B10 than a plan per run).
 */
export const PLANNED_EACH_RUN = "/* wes: planned at each run */ "

/** A driver client class that names parameterised statements seen before (names shared by its connections). */
export const preparingClient = (): typeof Pg.Client => {
  /** Text -> its name once it has one; texts seen once are in `once`. */
  const names = new Map<string, string>()
  const once = new Set<string>()
  const nameOf = (text: string): string | undefined => {
    const known = names.get(text)
    if (known !== undefined || names.size >= MAX_PREPARED || text.startsWith(PLANNED_EACH_RUN)) return known
    if (!once.has(text)) {
      // Bounded too: a flood of one-off texts starts the count again.
      if (once.size >= 10 * MAX_PREPARED) once.clear()
      once.add(text)
      return undefined
    }
    once.delete(text)
    const name = `wes_${names.size}`
    names.set(text, name)
    return name
  }
  const plain = Pg.Client.prototype.query as (this: Pg.Client, ...args: ReadonlyArray<unknown>) => unknown
  class PreparingClient extends Pg.Client {}
  // How @effect/sql-pg calls it: (text, values, callback). Any other call is passed on as it is.
  PreparingClient.prototype.query = function(this: Pg.Client, config: unknown, values?: unknown, callback?: unknown) {
    const name = typeof config === "string" && Array.isArray(values) && values.length > 0 && typeof callback === "function"
      ? nameOf(config)
      : undefined
    return name === undefined ? plain.call(this, config, values, callback) : plain.call(this, { name, text: config, values }, callback)
  } as typeof Pg.Client.prototype.query
  return PreparingClient
}

/** The driver's settings of one connection, from the client's configuration (as @effect/sql-pg maps them). */
export const driverConfig = (config: PgClient.PgClientConfig): Pg.ClientConfig => ({
  connectionString: config.url === undefined ? undefined : Redacted.value(config.url),
  user: config.username,
  host: config.host,
  database: config.database,
  password: config.password === undefined ? undefined : Redacted.value(config.password),
  ...(config.ssl === undefined ? {} : { ssl: config.ssl }),
  ...(config.port === undefined ? {} : { port: config.port }),
  ...(config.stream === undefined ? {} : { stream: config.stream }),
  ...(config.connectTimeout === undefined ? {} : { connectionTimeoutMillis: Duration.toMillis(config.connectTimeout) }),
  application_name: config.applicationName ?? "@effect/sql-pg"
})

export interface PgPoolConfig extends Omit<PgClient.PgClientConfig, "transformResultNames" | "transformQueryNames" | "transformJson" | "types"> {
  /** Prepared statements (default true); false for a pooler without sessions. */
  readonly preparedStatements?: boolean | undefined
}

/** `PgClient` and `SqlClient` over a pool of this config, checked with one query before they are handed out. */
export const pgClientLayer = (config: PgPoolConfig) =>
  PgClient.layerFromPool({
    applicationName: config.applicationName,
    spanAttributes: config.spanAttributes,
    acquire: Effect.acquireRelease(
      Effect.sync(() => {
        const pool = new Pg.Pool({
          ...driverConfig(config),
          ...(config.idleTimeout === undefined ? {} : { idleTimeoutMillis: Duration.toMillis(config.idleTimeout) }),
          ...(config.maxConnections === undefined ? {} : { max: config.maxConnections }),
          ...(config.minConnections === undefined ? {} : { min: config.minConnections }),
          ...(config.connectionTTL === undefined ? {} : { maxLifetimeSeconds: Duration.toSeconds(config.connectionTTL) }),
          ...(config.preparedStatements === false ? {} : { Client: preparingClient() })
        })
        // An idle connection's error is the pool's to handle (it drops the connection); statements fail on their own.
        pool.on("error", () => {})
        return pool
      }).pipe(Effect.tap((pool) =>
        Effect.tryPromise({
          try: () => pool.query("SELECT 1"),
          catch: (cause) => new SqlError({ cause, message: "PgClient: Failed to connect" })
        }).pipe(
          Effect.timeoutFail({
            duration: config.connectTimeout ?? Duration.seconds(5),
            onTimeout: () => new SqlError({ cause: new Error("Connection timed out"), message: "PgClient: Connection timed out" })
          }),
          Effect.tapError(() => Effect.promise(() => pool.end()))
        ))),
      (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000))
    )
  })
