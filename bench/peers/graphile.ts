/**
 * B1/B2's peer: graphile-worker 0.17 (the PostgreSQL job queue we hold up as a model) on the
 * same PostgreSQL. Env: DATABASE_URL, GRAPHILE_SCHEMA, GRAPHILE_CONCURRENCY, GRAPHILE_BATCHED
 * (`on`: its local queue of concurrency + 1 jobs fetched at once, and job completions written in
 * batches, as its release notes recommend for throughput; default off, one job per fetch).
 * IPC: start (run the worker), addJob (returns when added), burnDown (add n jobs in one
 * statement, then report when the worker has run them all), stop. Task starts are reported to the
 * parent as `{type: "started", id, at}` on the wall clock.
 */
import { Logger, makeWorkerUtils, run, type Runner, type WorkerUtils } from "graphile-worker"
import pg from "pg"
import { serve } from "../lib/child.js"

const now = () => performance.timeOrigin + performance.now()
const connectionString = process.env["DATABASE_URL"]!
const schema = process.env["GRAPHILE_SCHEMA"] ?? "graphile_worker_bench"
const concurrency = Number(process.env["GRAPHILE_CONCURRENCY"] ?? "4")
const silent = new Logger(() => () => {})
const batched = process.env["GRAPHILE_BATCHED"] === "on"

let runner: Runner | undefined
let done = 0
let target = 0
let onAllDone: (() => void) | undefined

const startRunner = async () => {
  runner = await run({
    connectionString,
    schema,
    concurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: silent,
    ...(batched ? { preset: { worker: { localQueue: { size: concurrency + 1 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 } } } : {}),
    taskList: {
      latency: async (payload) => {
        process.send!({ type: "started", id: (payload as { id: string }).id, at: now() })
      },
      noop: async () => {
        done++
        if (done === target) onAllDone?.()
      }
    }
  })
}

const utils: WorkerUtils = await makeWorkerUtils({ connectionString, schema, logger: silent })
await utils.migrate()
serve({
  start: async () => {
    await startRunner()
    return true
  },
  addJob: async (args) => {
    await utils.addJob("latency", { id: (args as { id: string }).id })
    return now()
  },
  /** Adds `n` no-op jobs in one statement, then starts the worker and times the burn-down. */
  burnDown: async (args) => {
    const { n } = args as { readonly n: number }
    const client = new pg.Client({ connectionString })
    await client.connect()
    await client.query(`SELECT ${schema}.add_job('noop', json_build_object('i', g)) FROM generate_series(1, $1::int) g`, [n])
    await client.end()
    done = 0
    target = n
    const finished = new Promise<void>((resolve) => (onAllDone = resolve))
    const started = now()
    await startRunner()
    await finished
    return { ms: now() - started }
  },
  stop: async () => {
    await runner?.stop()
    runner = undefined
    return true
  }
}, {})
process.on("SIGTERM", () => {
  void (async () => {
    await runner?.stop().catch(() => undefined)
    await Promise.resolve(utils.release()).catch(() => undefined)
    const client = new pg.Client({ connectionString })
    await client.connect()
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => undefined)
    await client.end()
    process.exit(0)
  })()
})
