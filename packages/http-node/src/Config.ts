/**
 * `wes serve` configuration, from the environment (all optional). Invalid values stop the server
 * at start with a message naming the variable.
 */
import * as Config from "effect/Config"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import { parseRateLimit, parseTrustProxy, type RateLimitSettings } from "./RateLimit.js"
import { invalidConfig, missingConfig } from "./Startup.js"
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
  /** WES_BLOB_STORE: `s3://bucket/prefix`, blobs in an S3-compatible bucket (default: in the store, or WES_BLOB_DIR). */
  readonly blobStore: Option.Option<string>
  /** WES_S3_PATH_STYLE: S3 requests to `endpoint/bucket/key` (default: on when AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL is set). */
  readonly s3PathStyle: boolean
  /** WES_BLOB_REDIRECT: a download answers 302 to a short-lived presigned URL of the blob store when it can sign one (S3) (false). */
  readonly blobRedirect: boolean
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
   * WES_AGENT_MIN_FREE_DISK: free disk an agent runner's agent must report for the runner to take
   * new work (5GB; `0`: no threshold).
   */
  readonly agentMinFreeDisk: number
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
  /**
   * URL inputs (`$file` parameters sent as URLs): private, loopback, link-local or unspecified
   * addresses are refused, the default except in dev mode; `WES_INPUT_URL_ALLOW_PRIVATE=true` allows them.
   */
  readonly inputUrlAllowPrivate: boolean
  /** URL inputs: `http://` URLs are refused (https only), the default except in dev mode; `WES_INPUT_URL_ALLOW_HTTP=true` allows them. */
  readonly inputUrlAllowHttp: boolean
  /** WES_INPUT_URL_TIMEOUT: a URL input's server must connect, answer, and send body bytes within this (30s). */
  readonly inputUrlTimeout: Duration.Duration
  /** WES_INPUT_URL_MAX_TIME: the most one URL input's fetch may take, body included (10m). */
  readonly inputUrlMaxTime: Duration.Duration
  /** WES_WEBHOOK_RETRY_BASE_MS: the first retry delay, doubled at each retry up to 1 hour (5000). */
  readonly webhookRetryBase: Duration.Duration
  /** WES_RETENTION_INTERVAL: time between retention sweeps (5m; at least 1s); `off`: no sweeper on this instance. */
  readonly retentionInterval: Option.Option<Duration.Duration>
  /** WES_EVENTS_RETENTION: a finished workflow's events are pruned this long after it ended (7d). */
  readonly eventsRetention: Duration.Duration
  /** WES_DELIVERIES_RETENTION: a webhook delivery is pruned this long after its outcome (30d). */
  readonly deliveriesRetention: Duration.Duration
}

/** The shortest accepted WES_ADMIN_TOKEN. */
export const ADMIN_TOKEN_MIN_LENGTH = 32

/** `name` read with `parse`; its message (naming the variable) is the configuration error. */
const parsed = <A>(name: string, config: Config.Config<string>, parse: (s: string) => Result.Result<A, string>) =>
  Config.mapEffect(config, (value) => Effect.mapError(Effect.fromResult(parse(value)), (message) => invalidConfig(name, message)))

/** `name` decoded by `schema`, then refused with `message` unless `valid`. */
const checked = <A>(schema: Schema.Codec<A, unknown>, name: string, message: string, valid: (a: A) => boolean) =>
  Config.schema(schema.check(Schema.makeFilter((a: A) => valid(a), { message })), name)

/** A duration of at least `min` milliseconds (and at most `max`). */
const duration = (name: string, message: string, min: number, max = Infinity) =>
  checked(Schema.DurationFromString, name, message, (d) => Duration.toMillis(d) >= min && Duration.toMillis(d) <= max)

const decodeDuration = Schema.decodeUnknownOption(Schema.DurationFromString)

/** `off`, or a duration of at least 1 second. */
const parseInterval = (s: string): Result.Result<Option.Option<Duration.Duration>, string> => {
  if (s.trim() === "off") return Result.succeed(Option.none())
  const d = decodeDuration(s)
  return Option.isSome(d) && Duration.toMillis(d.value) >= 1000
    ? Result.succeed(d)
    : Result.fail("WES_RETENTION_INTERVAL must be off or a duration of at least 1 second (e.g. 5 minutes)")
}

/** A byte size: `5GB`, `500MB`, `1.5GB`, or a number of bytes (units of 2^10, 2^20, 2^30, 2^40 bytes). */
const parseByteSize = (name: string) => (s: string): Result.Result<number, string> => {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB)?\s*$/i.exec(s)
  const unit = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3, TB: 1024 ** 4 }[(m?.[2] ?? "B").toUpperCase() as "B"]
  const bytes = m === null ? NaN : Math.floor(Number(m[1]) * unit)
  return Number.isSafeInteger(bytes) ? Result.succeed(bytes) : Result.fail(`${name} must be a size such as 5GB, 500MB or a number of bytes`)
}

/** An integer from `min` to `max`. */
const integer = (name: string, message: string, min: number, max: number) => checked(Schema.Int, name, message, (n) => n >= min && n <= max)

export const WesConfig: Config.Config<WesConfig> = Config.all({
  port: Config.Port("WES_PORT").pipe(Config.withDefault(8080)),
  host: Config.String("WES_HOST").pipe(Config.withDefault("127.0.0.1")),
  storage: Config.option(Config.Literals(["memory", "postgres"], "WES_STORAGE")),
  databaseUrl: Config.option(Config.Redacted("DATABASE_URL")),
  adminToken: Config.option(checked(
    Schema.Redacted(Schema.String),
    "WES_ADMIN_TOKEN",
    `WES_ADMIN_TOKEN must be at least ${ADMIN_TOKEN_MIN_LENGTH} characters (generate one with: openssl rand -hex 32)`,
    (token) => Redacted.value(token).length >= ADMIN_TOKEN_MIN_LENGTH
  )),
  metricsToken: Config.option(Config.Redacted("WES_METRICS_TOKEN")),
  rateLimit: parsed("WES_RATE_LIMIT", Config.String("WES_RATE_LIMIT").pipe(Config.withDefault("40/10s")), parseRateLimit),
  trustedProxies: parsed("WES_TRUST_PROXY", Config.String("WES_TRUST_PROXY").pipe(Config.withDefault("false")), parseTrustProxy),
  blobDir: Config.option(Config.String("WES_BLOB_DIR")),
  blobStore: Config.option(parsed("WES_BLOB_STORE", Config.String("WES_BLOB_STORE"), (url) =>
    url.startsWith("s3://") ? Result.succeed(url) : Result.fail("WES_BLOB_STORE must be s3://bucket/prefix (for a directory, set WES_BLOB_DIR)"))),
  // Servers at a custom endpoint (MinIO, Ceph, a local emulator) rarely have the wildcard DNS that bucket host names need.
  s3PathStyle: Config.all({
    set: Config.option(Config.Boolean("WES_S3_PATH_STYLE")),
    endpoint: Config.option(Config.String("AWS_ENDPOINT_URL_S3")),
    anyEndpoint: Config.option(Config.String("AWS_ENDPOINT_URL"))
  }).pipe(Config.map(({ anyEndpoint, endpoint, set }) => Option.getOrElse(set, () => Option.isSome(endpoint) || Option.isSome(anyEndpoint)))),
  blobRedirect: Config.Boolean("WES_BLOB_REDIRECT").pipe(Config.withDefault(false)),
  dev: Config.Boolean("WES_DEV").pipe(Config.withDefault(false)),
  shutdownGrace: Config.Duration("WES_SHUTDOWN_GRACE").pipe(Config.withDefault(Duration.seconds(10))),
  runnerConcurrency: integer("WES_RUNNER_CONCURRENCY", "WES_RUNNER_CONCURRENCY must be from 1 to 64", 1, 64).pipe(Config.withDefault(4)),
  priorityAging: duration("WES_PRIORITY_AGING", "WES_PRIORITY_AGING must be at least 1 second", 1000).pipe(
    Config.withDefault(Duration.minutes(5))
  ),
  runnerLostAfter: duration("WES_RUNNER_LOST_AFTER", "WES_RUNNER_LOST_AFTER must be at least 1 second", 1000).pipe(
    Config.withDefault(Duration.minutes(10))
  ),
  agentMinFreeDisk: parsed(
    "WES_AGENT_MIN_FREE_DISK",
    Config.String("WES_AGENT_MIN_FREE_DISK").pipe(Config.withDefault("5GB")),
    parseByteSize("WES_AGENT_MIN_FREE_DISK")
  ),
  lease: duration("WES_LEASE", "WES_LEASE must be at least 1 second", 1000).pipe(Config.withDefault(Duration.seconds(15))),
  dbSilenceTimeout: Config.option(duration("WES_DB_SILENCE_TIMEOUT", "WES_DB_SILENCE_TIMEOUT must be at least 1 second", 1000)),
  dbPreparedStatements: Config.Boolean("WES_DB_PREPARED_STATEMENTS").pipe(Config.withDefault(true)),
  runnerAllowPrivate: Config.option(Config.Boolean("WES_RUNNER_ALLOW_PRIVATE")),
  runnerDenyPrivate: Config.option(Config.Boolean("WES_RUNNER_DENY_PRIVATE")),
  capabilityRefresh: duration("WES_CAPABILITY_REFRESH", "WES_CAPABILITY_REFRESH must be at least 10 seconds", 10_000).pipe(
    Config.withDefault(Duration.minutes(5))
  ),
  tracing: TracingConfig,
  webhookAllowPrivate: Config.option(Config.Boolean("WES_WEBHOOK_ALLOW_PRIVATE")),
  inputUrlPrivate: Config.option(Config.Boolean("WES_INPUT_URL_ALLOW_PRIVATE")),
  inputUrlHttp: Config.option(Config.Boolean("WES_INPUT_URL_ALLOW_HTTP")),
  inputUrlTimeout: duration("WES_INPUT_URL_TIMEOUT", "WES_INPUT_URL_TIMEOUT must be from 100 milliseconds to 10 minutes", 100, 600_000).pipe(
    Config.withDefault(Duration.seconds(30))
  ),
  inputUrlMaxTime: duration("WES_INPUT_URL_MAX_TIME", "WES_INPUT_URL_MAX_TIME must be from 1 second to 1 hour", 1000, 3_600_000).pipe(
    Config.withDefault(Duration.minutes(10))
  ),
  webhookTimeout: duration("WES_WEBHOOK_TIMEOUT", "WES_WEBHOOK_TIMEOUT must be from 100 milliseconds to 60 seconds", 100, 60_000).pipe(
    Config.withDefault(Duration.seconds(10))
  ),
  webhookRetryBase: checked(Schema.Int, "WES_WEBHOOK_RETRY_BASE_MS", "WES_WEBHOOK_RETRY_BASE_MS must be from 10 to 3600000", (n) => n >= 10 && n <= 3_600_000).pipe(
    Config.withDefault(5000),
    Config.map(Duration.millis)
  ),
  retentionInterval: parsed("WES_RETENTION_INTERVAL", Config.String("WES_RETENTION_INTERVAL").pipe(Config.withDefault("5 minutes")), parseInterval),
  eventsRetention: duration("WES_EVENTS_RETENTION", "WES_EVENTS_RETENTION must be at least 1 minute", 60_000).pipe(Config.withDefault(Duration.days(7))),
  deliveriesRetention: duration("WES_DELIVERIES_RETENTION", "WES_DELIVERIES_RETENTION must be at least 1 minute", 60_000).pipe(
    Config.withDefault(Duration.days(30))
  )
}).pipe(Config.mapEffect(({ inputUrlHttp, inputUrlPrivate, runnerAllowPrivate, runnerDenyPrivate, storage, webhookAllowPrivate, ...rest }) =>
  // DATABASE_URL alone used to start a memory store silently: data meant to be kept was lost at restart.
  Option.isNone(storage) && Option.isSome(rest.databaseUrl)
    ? Effect.fail(invalidConfig(
      "WES_STORAGE",
      "DATABASE_URL is set but WES_STORAGE is not: set WES_STORAGE=postgres to use the database, or WES_STORAGE=memory to run without it"
    ))
    : Effect.succeed<WesConfig>({
      ...rest,
      storage: Option.getOrElse(storage, () => "memory" as const),
      runnerDenyPrivate: Option.match(runnerAllowPrivate, {
        onSome: (allow) => !allow,
        onNone: () => Option.getOrElse(runnerDenyPrivate, () => !rest.dev)
      }),
      webhookDenyPrivate: Option.match(webhookAllowPrivate, { onSome: (allow) => !allow, onNone: () => !rest.dev }),
      inputUrlAllowPrivate: Option.getOrElse(inputUrlPrivate, () => rest.dev),
      inputUrlAllowHttp: Option.getOrElse(inputUrlHttp, () => rest.dev)
    })))

/** Reads and checks the configuration (from the current ConfigProvider). */
export const loadConfig: Effect.Effect<WesConfig, Config.ConfigError> = Effect.flatMap(WesConfig, (c) =>
  c.storage === "postgres" && Option.isNone(c.databaseUrl)
    ? Effect.fail(missingConfig("DATABASE_URL", "WES_STORAGE=postgres needs DATABASE_URL"))
    : Option.isSome(c.blobStore) && Option.isSome(c.blobDir)
    ? Effect.fail(invalidConfig("WES_BLOB_STORE", "WES_BLOB_STORE and WES_BLOB_DIR are both set: blobs go to one place, unset one of them"))
    : Effect.succeed(c))
