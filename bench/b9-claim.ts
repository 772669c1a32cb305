/**
 * B9: the cost of scheduling per claim (issue 17). One runner with 1,000 waiting workflows of 100
 * users (mixed priorities); each claim takes 4 in WES's order (priority with aging, fair share,
 * age) and gives them back, so every claim sees the same queue. The peer is the plain
 * first-come claim of a job queue (graphile-worker's shape: oldest first, `FOR UPDATE SKIP
 * LOCKED LIMIT 4`) on the same table and rows, in the same run. Both stores; in process.
 */
import * as SqlClient from "effect/sql/SqlClient"
import { DispatchQueue, WorkflowRepository } from "@wes/core"
import { Fixtures } from "@wes/core/testing"
import { MemoryStoreLive } from "@wes/storage-memory"
import { PgStoreLive } from "@wes/storage-pg"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import { alternate, type Benchmark } from "./lib/bench.js"
import { createSchema } from "./lib/pg.js"
import { fmt, ratio, type Row } from "./lib/report.js"
import { mean } from "./lib/stats.js"

const WAITING = 1_000
const USERS = 100
const BATCH = 4
const AGING_MS = 300_000

/** The runner's queue: `WAITING` workflows of `USERS` users, a tenth high and a tenth low. */
const fill = (runner: string) =>
  Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const users = Array.from({ length: USERS }, () => Fixtures.user())
    for (let i = 0; i < WAITING; i++) {
      yield* repo.create(Fixtures.workflow(users[i % USERS]!.id, {
        user_runner_id: runner as never,
        created_at: Fixtures.at(i / 60),
        priority: i % 10 === 0 ? "high" : i % 10 === 1 ? "low" : "normal"
      }))
    }
  })

/** Milliseconds per claim of `claims` claims by `claim`, each given back. */
const timeClaims = <R>(claims: number, claim: Effect.Effect<ReadonlyArray<string>, unknown, R>) =>
  Effect.gen(function*() {
    const queue = yield* DispatchQueue
    const started = performance.now()
    for (let i = 0; i < claims; i++) {
      const ids = yield* claim
      if (ids.length !== BATCH) return yield* Effect.die(new Error(`claimed ${ids.length}, expected ${BATCH}`))
      yield* queue.release(ids, "bench")
    }
    return (performance.now() - started) / claims
  })

const wesClaim = (runner: string) =>
  Effect.flatMap(DispatchQueue, (q) => Effect.map(q.claim(runner, "bench", BATCH, 60_000, AGING_MS), (cs) => cs.map((c) => c.workflow.id as string)))

/** The first-come claim of a job queue, on the same rows (PostgreSQL). */
const fifoClaim = (runner: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ id: string }>`WITH picked AS (
          SELECT id FROM workflows
          WHERE coalesce(user_runner_id, managed_runner_id) = ${runner} AND status IN ('accepted', 'uploaded')
            AND (claimed_by IS NULL OR lease_expires_at < now())
          ORDER BY created_at, id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
        UPDATE workflows w SET claimed_by = 'bench', lease_expires_at = now() + interval '1 minute'
        FROM picked WHERE w.id = picked.id RETURNING w.id`,
      (rows) => rows.map((r) => r.id)
    ))

const runOn = async <R, E>(
  layer: Layer.Layer<DispatchQueue | WorkflowRepository | R, E>,
  claims: number,
  rounds: number,
  peer?: (runner: string) => Effect.Effect<ReadonlyArray<string>, unknown, DispatchQueue | R>
) => {
  const runtime = ManagedRuntime.make(layer)
  try {
    const runner = Fixtures.uuid()
    await runtime.runPromise(fill(runner))
    // Warm up both paths.
    await runtime.runPromise(timeClaims(5, wesClaim(runner)))
    if (peer !== undefined) await runtime.runPromise(timeClaims(5, peer(runner)))
    const { a, b } = await alternate(
      rounds,
      () => runtime.runPromise(timeClaims(claims, wesClaim(runner))),
      () => (peer === undefined ? Promise.resolve(Number.NaN) : runtime.runPromise(timeClaims(claims, peer(runner))))
    )
    return { wes: mean(a), peer: mean(b) }
  } finally {
    await runtime.dispose()
  }
}

export const b9: Benchmark = {
  id: "B9",
  title: `scheduling cost per claim of ${BATCH}: ${WAITING} waiting workflows of ${USERS} users on one runner`,
  run: async (size) => {
    const claims = size === "full" ? 300 : 10
    const rounds = size === "full" ? 3 : 1
    const rows: Array<Row> = []
    const memory = await runOn(MemoryStoreLive, claims, rounds)
    rows.push({
      bench: "B9",
      metric: "claim, memory (ms; no peer: a job queue has no memory store)",
      wes: fmt(memory.wes, 3),
      peer: "",
      ratio: "",
      target: "",
      met: "n/a"
    })
    const schema = await createSchema()
    try {
      const pg = await runOn(PgStoreLive({ url: Redacted.make(schema.url), maxConnections: 4 }), claims, rounds, fifoClaim)
      rows.push({
        bench: "B9",
        metric: "claim, PostgreSQL (ms): priority + fair share vs first-come",
        wes: fmt(pg.wes, 2),
        peer: fmt(pg.peer, 2),
        ratio: ratio(pg.wes, pg.peer),
        target: "",
        met: "n/a"
      })
    } finally {
      await schema.drop()
    }
    return rows
  }
}
