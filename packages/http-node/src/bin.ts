#!/usr/bin/env node
/** The `wes` command. `wes serve` runs the server; configuration comes from the environment. */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import { readFileSync } from "node:fs"
import { loadConfig } from "./Config.js"
import { startGarbageNudge } from "./GarbageNudge.js"
import { jsonLoggerLayer } from "./Logging.js"
import { serverLayer } from "./Main.js"
import { describeStartupFailure, environmentProvider, reportStartupFailure } from "./Startup.js"

const USAGE = `Usage: wes serve      run the server
       wes --version  print the version
       wes --help     print this

Configuration (environment, all optional; an empty variable counts as unset):
  WES_PORT (8080)  WES_HOST (127.0.0.1)  WES_STORAGE (memory | postgres; required with DATABASE_URL)  DATABASE_URL
  WES_ADMIN_TOKEN (at least 32 characters; enables /admin/v1)  WES_RATE_LIMIT (40/10s | off)  WES_TRUST_PROXY (false | true | N)
  WES_BLOB_DIR  WES_BLOB_STORE (s3://bucket/prefix; AWS_REGION, AWS_ENDPOINT_URL_S3, keys)  WES_S3_PATH_STYLE  WES_BLOB_REDIRECT (false)
  WES_TIER_LIMITS (JSON)  WES_RUNNER_PROBE (on | off)  WES_DEV (1: demo user and simulated runner)
  WES_SHUTDOWN_GRACE (10 seconds)  WES_RUNNER_CONCURRENCY (4: prompts kept on a runner)  WES_PRIORITY_AGING (5 minutes)
  WES_LEASE (15 seconds)  WES_METRICS_TOKEN (bearer token for /metrics)
  WES_AGENT_MIN_FREE_DISK (5GB: an agent runner reporting less free disk takes no new work; 0: no threshold)
  WES_DB_SILENCE_TIMEOUT (30 seconds: a PostgreSQL connection silent that long is dropped, 503)
  WES_RUNNER_ALLOW_PRIVATE (false: runner endpoints on private, loopback or link-local addresses are refused)
  WES_CAPABILITY_REFRESH (5 minutes: every runner's /object_info is read again at least this often)
Tracing (off unless an endpoint is set): OTEL_EXPORTER_OTLP_ENDPOINT (base URL; spans to <base>/v1/traces)
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT  OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf | http/json)
  OTEL_EXPORTER_OTLP_HEADERS (k=v,k2=v2)  OTEL_SERVICE_NAME (wes)  OTEL_SDK_DISABLED (true: off)
  WES_WEBHOOK_ALLOW_PRIVATE (false: webhook URLs on private, loopback or link-local addresses are refused)
  WES_WEBHOOK_TIMEOUT (10 seconds)  WES_WEBHOOK_RETRY_BASE_MS (5000: first retry delay, doubled up to 1 hour)
  WES_RETENTION_INTERVAL (5 minutes | off: sweeps of expired files)  WES_EVENTS_RETENTION (7 days)  WES_DELIVERIES_RETENTION (30 days)
  WES_INPUT_URL_ALLOW_PRIVATE (false: URL inputs on private, loopback or link-local addresses are refused)
  WES_INPUT_URL_ALLOW_HTTP (false: https:// only)  WES_INPUT_URL_TIMEOUT (30 seconds)  WES_INPUT_URL_MAX_TIME (10 minutes)
See docs/configuration.md.
`

/** The package's version (package.json is next to both src/ and dist/). */
const version = (): string => {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { readonly version?: unknown }
  return typeof pkg.version === "string" ? pkg.version : "unknown"
}

const serve = () => {
  // Dropped byte buffers are collected every 8 MB, not every 64 (GarbageNudge.ts).
  startGarbageNudge()
  let signal: string | undefined
  for (const s of ["SIGTERM", "SIGINT"] as const) process.once(s, () => (signal ??= s))
  const context: { port: number | undefined; storage: string | undefined } = { port: undefined, storage: undefined }
  const program = Effect.gen(function*() {
    const config = yield* loadConfig
    context.port = config.port
    context.storage = config.storage
    return yield* Layer.launch(serverLayer(config))
  }).pipe(
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause)
        ? Effect.failCause(cause)
        : Effect.sync(() => {
          reportStartupFailure(describeStartupFailure(cause, context))
          process.exitCode = 1
        })),
    Effect.onInterrupt(() => Effect.logInfo("stopped", { signal: signal ?? "interrupt" })),
    Effect.provideService(ConfigProvider.ConfigProvider, environmentProvider()),
    Effect.provide(jsonLoggerLayer())
  )
  // Stopped by a signal is a normal end (exit code 0), as is a failed start once reported (process.exitCode).
  NodeRuntime.runMain(program, {
    teardown: (exit, onExit) => onExit(Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause) ? 1 : 0)
  })
}

const [command, ...rest] = process.argv.slice(2)
const wantsHelp = (args: ReadonlyArray<string>) => args.some((a) => a === "--help" || a === "-h")
if (command === "--version" || command === "-v" || command === "version") {
  process.stdout.write(`wes ${version()}\n`)
} else if (command === "--help" || command === "-h" || command === "help" || (command === "serve" && wantsHelp(rest))) {
  process.stdout.write(USAGE)
} else if (command === "serve" && rest.length === 0) {
  serve()
} else {
  const what = command === undefined ? "" : command === "serve" ? `Unknown option: ${rest.join(" ")}\n\n` : `Unknown command: ${command}\n\n`
  process.stderr.write(what + USAGE)
  process.exitCode = 2
}
