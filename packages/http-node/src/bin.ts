#!/usr/bin/env node
/** The `wes` command. `wes serve` runs the server; configuration comes from the environment. */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { loadConfig } from "./Config.js"
import { jsonLoggerLayer } from "./Logging.js"
import { serverLayer } from "./Main.js"

const USAGE = `Usage: wes serve

Runs the WES server. Configuration (environment, all optional):
  WES_PORT (8080)  WES_HOST (127.0.0.1)  WES_STORAGE (memory | postgres)  DATABASE_URL
  WES_ADMIN_TOKEN (enables /admin/v1)  WES_RATE_LIMIT (40/10s | off)  WES_TRUST_PROXY (false | true | N)
  WES_BLOB_DIR  WES_TIER_LIMITS (JSON)  WES_RUNNER_PROBE (on | off)  WES_DEV (1: demo user and simulated runner)
  WES_SHUTDOWN_GRACE (10 seconds)  WES_RUNNER_CONCURRENCY (4)  WES_LEASE (15 seconds)
  WES_DB_SILENCE_TIMEOUT (30 seconds: a PostgreSQL connection silent that long is dropped, 503)
  WES_RUNNER_ALLOW_PRIVATE (false: runner endpoints on private, loopback or link-local addresses are refused)
`

const command = process.argv[2]
if (command === "serve") {
  Effect.flatMap(loadConfig, (config) => Layer.launch(serverLayer(config))).pipe(
    Effect.provide(jsonLoggerLayer()),
    NodeRuntime.runMain({ disablePrettyLogger: true })
  )
} else if (command === "--help" || command === "-h" || command === "help") {
  process.stdout.write(USAGE)
} else {
  process.stderr.write(command === undefined ? USAGE : `Unknown command: ${command}\n\n${USAGE}`)
  process.exitCode = 2
}
