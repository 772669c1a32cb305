/**
 * `wes serve` configuration, from the environment (all optional). Invalid values stop the server
 * at start with a message naming the variable.
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { parseRateLimit, parseTrustProxy, type RateLimitSettings } from "./RateLimit.js"
import { TracingConfig } from "./Tracing.js"

export interface WesConfig {
  /** WES_PORT (8080). */
  readonly port: number
  /** WES_HOST (127.0.0.1). */
  readonly host: string
  /** WES_STORAGE: memory (default) or postgres. */
  readonly storage: "memory" | "postgres"
  /** DATABASE_URL (required with WES_STORAGE=postgres). */
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  /** WES_ADMIN_TOKEN: enables /admin/v1. */
  readonly adminToken: Option.Option<Redacted.Redacted<string>>
  /** WES_METRICS_TOKEN: `GET /metrics` asks for it as a bearer token (unset: open). */
  readonly metricsToken: Option.Option<Redacted.Redacted<string>>
  /** WES_RATE_LIMIT: `40/10s` (default) or `off`. */
  readonly rateLimit: RateLimitSettings | "off"
  /** WES_TRUST_PROXY: number of proxies appending to X-Forwarded-For (`true` = 1). */
  readonly trustedProxies: number
  /** WES_BLOB_DIR: keep blobs as files there (default: in the store). */
  readonly blobDir: Option.Option<string>
  /** WES_DEV: demo user, token and a simulated local runner. */
  readonly dev: boolean
  /** WES_SHUTDOWN_GRACE: how long in-flight requests may take after SIGTERM (10s). */
  readonly shutdownGrace: Duration.Duration
  /** WES_RUNNER_CONCURRENCY: workflows submitted to one runner at the same time (4). */
  readonly runnerConcurrency: number
  /**
   * WES_LEASE: how long a claim on a workflow or on a runner lasts without renewal, i.e. how long
   * the work of an instance that died waits before another takes it over (15s).
   */
  readonly lease: Duration.Duration
  /** How long a waiting workflow takes to rise one priority level. */
  readonly priorityAging: Duration.Duration
  /**
   * WES_RUNNER_LOST_AFTER: how long a runner may stay unreachable before the workflows queued or
   * running on it end `failed` with `RunnerLost` (or are retried on another runner) (10m).
   */
  readonly runnerLostAfter: Duration.Duration
  /**
   * WES_DB_SILENCE_TIMEOUT: a PostgreSQL connection that carries nothing either way for this
   * long is dropped, so a statement on a connection that went silent fails (503) instead of
   * hanging (default: the store's, 30s).
   */
  readonly dbSilenceTimeout: Option.Option<Duration.Duration>
  /**
   * WES_DB_PREPARED_STATEMENTS: PostgreSQL store: prepare each statement once per connection
   * (true); false behind a pooler that does not keep a session per client (PgBouncer in
   * transaction mode before 1.21).
   */
  readonly dbPreparedStatements: boolean
  /**
   * Refuse user runner endpoints that resolve to private, loopback, link-local or unspecified
   * addresses: the default, except in dev mode. `WES_RUNNER_ALLOW_PRIVATE=true` allows them (a
   * single-tenant install whose runners are on its own network); the older
   * `WES_RUNNER_DENY_PRIVATE` is still read when `WES_RUNNER_ALLOW_PRIVATE` is not set.
   */
  readonly runnerDenyPrivate: boolean
  /**
   * WES_CAPABILITY_REFRESH: every active runner's `/object_info` is read again at least this often
   * (5m; at least 10s). Reads also happen at registration and at every reconnection.
   */
  readonly capabilityRefresh: Duration.Duration
  /** OTEL_EXPORTER_OTLP_ENDPOINT and the other standard OTLP variables: export spans (Tracing.ts; unset: off). */
  readonly tracing: Option.Option<TracingConfig>
  /**
   * Refuse webhook URLs that resolve to private, loopback, link-local or unspecified addresses:
   * the default, except in dev mode; `WES_WEBHOOK_ALLOW_PRIVATE=true` allows them.
   */
  readonly webhookDenyPrivate: boolean
  /** WES_WEBHOOK_TIMEOUT: how long a receiver has to answer (10s). */
  readonly webhookTimeout: Duration.Duration
  /** WES_WEBHOOK_RETRY_BASE_MS: the first retry delay, doubled at each retry up to 1 hour (5000). */
  readonly webhookRetryBase: Duration.Duration
}

/** The shortest accepted WES_ADMIN_TOKEN. */
export const ADMIN_TOKEN_MIN_LENGTH = 32

const parsed = <A>(name: string, config: Config.Config<string>, parse: (s: string) => Result.Result<A, string>) =>
  Config.mapOrFail(config, (value) =>
    Result.mapLeft(parse(value), (message) => ConfigError.InvalidData([name], message)))

export const WesConfig: Config.Config<WesConfig> = Config.all({
  port: Config.port("WES_PORT").pipe(Config.withDefault(8080)),
  host: Config.string("WES_HOST").pipe(Config.withDefault("127.0.0.1")),
  storage: Config.option(Config.literal("memory", "postgres")("WES_STORAGE")),
  databaseUrl: Config.option(Config.redacted("DATABASE_URL")),
  adminToken: Config.option(Config.redacted("WES_ADMIN_TOKEN").pipe(Config.validate({
    message: `WES_ADMIN_TOKEN must be at least ${ADMIN_TOKEN_MIN_LENGTH} characters (generate one with: openssl rand -hex 32)`,
    validation: (token) => Redacted.value(token).length >= ADMIN_TOKEN_MIN_LENGTH
  }))),
  metricsToken: Config.option(Config.redacted("WES_METRICS_TOKEN")),
  rateLimit: parsed("WES_RATE_LIMIT", Config.string("WES_RATE_LIMIT").pipe(Config.withDefault("40/10s")), parseRateLimit),
  trustedProxies: parsed("WES_TRUST_PROXY", Config.string("WES_TRUST_PROXY").pipe(Config.withDefault("false")), parseTrustProxy),
  blobDir: Config.option(Config.string("WES_BLOB_DIR")),
  dev: Config.boolean("WES_DEV").pipe(Config.withDefault(false)),
  shutdownGrace: Config.duration("WES_SHUTDOWN_GRACE").pipe(Config.withDefault(Duration.seconds(10))),
  runnerConcurrency: Config.integer("WES_RUNNER_CONCURRENCY").pipe(
    Config.validate({ message: "WES_RUNNER_CONCURRENCY must be from 1 to 64", validation: (n) => n >= 1 && n <= 64 }),
    Config.withDefault(4)
  ),
  priorityAging: Config.duration("WES_PRIORITY_AGING").pipe(
    Config.validate({ message: "WES_PRIORITY_AGING must be at least 1 second", validation: (d) => Duration.toMillis(d) >= 1000 }),
    Config.withDefault(Duration.minutes(5))
  ),
  runnerLostAfter: Config.duration("WES_RUNNER_LOST_AFTER").pipe(
    Config.validate({ message: "WES_RUNNER_LOST_AFTER must be at least 1 second", validation: (d) => Duration.toMillis(d) >= 1000 }),
    Config.withDefault(Duration.minutes(10))
  ),
  lease: Config.duration("WES_LEASE").pipe(
    Config.validate({ message: "WES_LEASE must be at least 1 second", validation: (d) => Duration.toMillis(d) >= 1000 }),
    Config.withDefault(Duration.seconds(15))
  ),
  dbSilenceTimeout: Config.duration("WES_DB_SILENCE_TIMEOUT").pipe(
    Config.validate({ message: "WES_DB_SILENCE_TIMEOUT must be at least 1 second", validation: (d) => Duration.toMillis(d) >= 1000 }),
    Config.option
  ),
  dbPreparedStatements: Config.boolean("WES_DB_PREPARED_STATEMENTS").pipe(Config.withDefault(true)),
  runnerAllowPrivate: Config.option(Config.boolean("WES_RUNNER_ALLOW_PRIVATE")),
  runnerDenyPrivate: Config.option(Config.boolean("WES_RUNNER_DENY_PRIVATE")),
  capabilityRefresh: Config.duration("WES_CAPABILITY_REFRESH").pipe(
    Config.validate({ message: "WES_CAPABILITY_REFRESH must be at least 10 seconds", validation: (d) => Duration.toMillis(d) >= 10_000 }),
    Config.withDefault(Duration.minutes(5))
  ),
  tracing: TracingConfig,
  webhookAllowPrivate: Config.option(Config.boolean("WES_WEBHOOK_ALLOW_PRIVATE")),
  webhookTimeout: Config.duration("WES_WEBHOOK_TIMEOUT").pipe(
    Config.validate({
      message: "WES_WEBHOOK_TIMEOUT must be from 100 milliseconds to 60 seconds",
      validation: (d) => Duration.toMillis(d) >= 100 && Duration.toMillis(d) <= 60_000
    }),
    Config.withDefault(Duration.seconds(10))
  ),
  webhookRetryBase: Config.integer("WES_WEBHOOK_RETRY_BASE_MS").pipe(
    Config.validate({ message: "WES_WEBHOOK_RETRY_BASE_MS must be from 10 to 3600000", validation: (n) => n >= 10 && n <= 3_600_000 }),
    Config.withDefault(5000),
    Config.map(Duration.millis)
  )
}).pipe(Config.mapOrFail(({ runnerAllowPrivate, runnerDenyPrivate, storage, webhookAllowPrivate, ...rest }) =>
  // DATABASE_URL alone used to start a memory store silently: data meant to be kept was lost at restart.
  Option.isNone(storage) && Option.isSome(rest.databaseUrl)
    ? Result.fail(ConfigError.InvalidData(
      ["WES_STORAGE"],
      "DATABASE_URL is set but WES_STORAGE is not: set WES_STORAGE=postgres to use the database, or WES_STORAGE=memory to run without it"
    ))
    : Result.right<WesConfig>({
      ...rest,
      storage: Option.getOrElse(storage, () => "memory" as const),
      runnerDenyPrivate: Option.match(runnerAllowPrivate, {
        onSome: (allow) => !allow,
        onNone: () => Option.getOrElse(runnerDenyPrivate, () => !rest.dev)
      }),
      webhookDenyPrivate: Option.match(webhookAllowPrivate, { onSome: (allow) => !allow, onNone: () => !rest.dev })
    })))

/** Reads and checks the configuration. */
export const loadConfig: Effect.Effect<WesConfig, ConfigError.ConfigError> = Effect.flatMap(WesConfig, (c) =>
  c.storage === "postgres" && c.databaseUrl._tag === "None"
    ? Effect.fail(ConfigError.MissingData(["DATABASE_URL"], "WES_STORAGE=postgres needs DATABASE_URL"))
    : Effect.succeed(c))
