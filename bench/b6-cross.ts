/**
 * B6: events across instances. Two WES instances on one PostgreSQL schema: A runs the dispatcher
 * (so the runner's WebSocket, and its progress messages, arrive at A); B only serves the API, and
 * the SSE clients subscribe at B. Latency is from the fake runner sending a `progress` message to
 * the client at B receiving it: A's WebSocket handling, the insert, NOTIFY, B's LISTEN and B's
 * SSE hub. A's dispatcher runs throughout: in each measured wave the fakes hold the prompts
 * until every workflow is on a runner and every subscriber listens, then let them run, one by
 * one over a step's period (runners do not tick in step). The warm-up wave is measured too, not against a target: its workflows start as A's
 * dispatcher starts its runners (one driver per runner: lease, socket, capabilities, claims),
 * which is what every wave measured before 2026-11-27. Then the same again while B's LISTEN
 * connection is killed (pg_terminate_backend) and restored: every event must still arrive, with
 * no gap in the ids.
 * Peer: a raw `pg` LISTEN/NOTIFY round trip (NOTIFY on one connection, received on another).
 */
import pg from "pg"
import type { SseResults } from "./b5-sse.js"
import { alternate, type Benchmark, sleep, sleepWorkflow } from "./lib/bench.js"
import { type Child, start } from "./lib/child.js"
import { databaseUrl } from "./lib/machine.js"
import { createSchema } from "./lib/pg.js"
import { fmt, ratio, type Row, verdict } from "./lib/report.js"
import { type Summary, summarize } from "./lib/stats.js"

const APP_B = "wes-bench-b6-b"

/** `n` NOTIFY -> LISTEN round trips, one every `intervalMs`, on two connections of their own. */
const rawRoundTrips = async (n: number, intervalMs: number): Promise<Summary> => {
  const listener = new pg.Client({ connectionString: databaseUrl })
  const notifier = new pg.Client({ connectionString: databaseUrl })
  await Promise.all([listener.connect(), notifier.connect()])
  try {
    const channel = `wes_bench_b6_${process.pid}`
    await listener.query(`LISTEN ${channel}`)
    const latencies: Array<number> = []
    let waiting: ((at: number) => void) | undefined
    listener.on("notification", () => waiting?.(performance.now()))
    for (let i = 0; i < n; i++) {
      const arrived = new Promise<number>((resolve) => (waiting = resolve))
      const sent = performance.now()
      await notifier.query("SELECT pg_notify($1, $2)", [channel, String(i)])
      latencies.push((await arrived) - sent)
      await sleep(intervalMs)
    }
    return summarize(latencies)
  } finally {
    await Promise.all([listener.end(), notifier.end()])
  }
}

/** The pids of B's LISTEN connection. */
const listenerPids = async (admin: pg.Client): Promise<ReadonlyArray<number>> =>
  (await admin.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query ILIKE 'LISTEN%'`, [APP_B])).rows.map((r) => r.pid)

export const b6: Benchmark = {
  id: "B6",
  title: "cross-instance events: runner at instance A, SSE client at instance B",
  run: async (size) => {
    const workflows = size === "full" ? 20 : 2
    const seconds = size === "full" ? 10 : 2
    const rounds = size === "full" ? 2 : 1
    const rate = 10
    const steps = seconds * rate
    const schema = await createSchema()
    const admin = new pg.Client({ connectionString: databaseUrl })
    await admin.connect()
    const children: Array<Child<unknown>> = []
    try {
      const fakes = await start<{ urls: ReadonlyArray<string> }>("servers/fakes.ts", { FAKES: String(workflows) })
      children.push(fakes)
      // A's dispatcher starts with the warm-up wave, once its subscribers listen, and runs from then on.
      const a = await start<{ url: string }>("servers/wes.ts", { BENCH_STORE: "postgres", DATABASE_URL: schema.url, BENCH_APP_NAME: "wes-bench-b6-a", BENCH_DISPATCH: "off" })
      children.push(a)
      const b = await start<{ url: string }>("servers/wes.ts", { BENCH_STORE: "postgres", DATABASE_URL: schema.url, BENCH_APP_NAME: APP_B, BENCH_DISPATCH: "off" })
      children.push(b)
      const { token } = await a.call<{ token: string }>("setup", { runners: fakes.ready.urls })
      const auth = { authorization: `Bearer ${token}` }
      let dispatching = false

      /** Waits until every workflow of `ids` is on a runner (queued or running there). */
      const onRunners = async (ids: ReadonlyArray<string>) => {
        const deadline = Date.now() + 60_000
        for (const id of ids) {
          for (;;) {
            const d = (await (await fetch(`${b.ready.url}/v1/workflow/${id}`, { headers: auth })).json()) as { status: string }
            if (d.status === "queued" || d.status === "running") break
            if (Date.now() > deadline) throw new Error(`B6: workflow ${id} did not reach a runner (${d.status})`)
            await sleep(50)
          }
        }
      }

      /**
       * One wave: `workflows` jobs created at B and followed at B. The first starts A's dispatcher
       * once its subscribers listen; the others hold the fakes until every workflow is on a
       * runner, so no progress precedes a subscriber and none waits for dispatch. `during` runs
       * while they run.
       */
      const wave = async (during?: () => Promise<void>): Promise<SseResults> => {
        const first = !dispatching
        if (!first) await fakes.call("hold")
        const ids: Array<string> = []
        for (let i = 0; i < workflows; i++) {
          const form = new FormData()
          form.append("name", `b6-${i}`)
          form.append("workflow_json", new Blob([JSON.stringify(sleepWorkflow(seconds, steps, i))]), "w.json")
          const res = await fetch(`${b.ready.url}/v1/workflow`, { method: "POST", headers: auth, body: form })
          if (res.status !== 201) throw new Error(`B6 create: ${res.status} ${await res.text()}`)
          ids.push(((await res.json()) as { id: string }).id)
        }
        const clients = await start<Record<string, never>>("clients/sse.ts")
        try {
          await clients.call("open", {
            steps,
            subscriptions: ids.map((id) => ({ url: `${b.ready.url}/v1/workflow/${id}/subscribe`, headers: auth, key: id }))
          })
          if (first) {
            await a.call("startDispatcher")
            dispatching = true
          } else {
            await onRunners(ids)
            // One by one over a step's period: runners do not tick in step (the peer's NOTIFYs are evenly spaced too).
            await fakes.call("release", { spreadMs: 1000 / rate })
          }
          await during?.()
          const deadline = Date.now() + (seconds + 60) * 1000
          const details: Array<{ id: string; prompt_id: string | null; status: string }> = []
          for (const id of ids) {
            for (;;) {
              const d = (await (await fetch(`${b.ready.url}/v1/workflow/${id}`, { headers: auth })).json()) as { id: string; prompt_id: string | null; status: string }
              if (["completed", "failed", "invalid", "cancelled"].includes(d.status)) {
                if (d.status !== "completed") throw new Error(`B6: workflow ${id} ended ${d.status}`)
                details.push(d)
                break
              }
              if (Date.now() > deadline) throw new Error(`B6: workflow ${id} did not finish (${d.status})`)
              await sleep(200)
            }
          }
          const progress = await fakes.call<Record<string, number>>("progressSent")
          const sent: Record<string, Array<number>> = {}
          for (const d of details) {
            const times = new Array<number>(steps + 1).fill(0)
            for (let s = 1; s <= steps; s++) times[s] = progress[`${d.prompt_id}:${s}`] ?? 0
            sent[d.id] = times
          }
          // The workflows are done in the database; give B until every event has reached its
          // clients (after an outage B catches up from the log), up to 30 s: what is missing then is lost.
          const until = Date.now() + 30_000
          for (;;) {
            const results = await clients.call<SseResults>("results", { sent })
            if (results.lost === 0 || Date.now() > until) return results
            await sleep(250)
          }
        } finally {
          await clients.stop()
        }
      }

      const warmUp = await wave()
      const steady = await alternate(rounds, () => wave(), () => rawRoundTrips(workflows * steps, 1000 / rate / workflows))
      const latencies = steady.a.map((r) => r.latency)
      const p50 = Math.max(...latencies.map((l) => l.p50))
      const p99 = Math.max(...latencies.map((l) => l.p99))
      const rawP50 = Math.max(...steady.b.map((l) => l.p50))
      const rawP99 = Math.max(...steady.b.map((l) => l.p99))

      // The same wave while B's LISTEN connection is killed half-way through, then restored.
      let restoredMs = Number.NaN
      const killed = await wave(async () => {
        await sleep((seconds * 1000) / 2)
        const before = await listenerPids(admin)
        if (before.length === 0) throw new Error("B6: B has no LISTEN connection")
        const at = performance.now()
        for (const pid of before) await admin.query("SELECT pg_terminate_backend($1)", [pid])
        for (;;) {
          const now = await listenerPids(admin)
          if (now.some((p) => !before.includes(p))) break
          if (performance.now() - at > 30_000) throw new Error("B6: B's LISTEN connection was not restored")
          await sleep(20)
        }
        restoredMs = performance.now() - at
      })

      const steadyAll = steady.a.reduce((n, r) => n + r.expected, 0)
      const steadyLost = steady.a.reduce((n, r) => n + r.lost + r.duplicates + r.idGaps, 0)
      return [
        { bench: "B6", metric: `A -> B delivery p50 (ms), ${workflows} workflows x ${rate}/s`, wes: fmt(p50, 1), peer: fmt(rawP50, 2), ratio: ratio(p50, rawP50, 1), target: "<= 3 ms", met: verdict(p50 <= 3) },
        { bench: "B6", metric: "A -> B delivery p99 (ms)", wes: fmt(p99, 1), peer: fmt(rawP99, 2), ratio: ratio(p99, rawP99, 1), target: "<= 20 ms", met: verdict(p99 <= 20) },
        { bench: "B6", metric: "warm-up wave, started with A's dispatcher: delivery p50 / p99 (ms)", wes: `${fmt(warmUp.latency.p50, 1)} / ${fmt(warmUp.latency.p99, 1)}`, peer: "", ratio: "", target: "", met: "n/a" },
        { bench: "B6", metric: "events lost, duplicated or out of order (steady)", wes: `${fmt(steadyLost)} of ${fmt(steadyAll)}`, peer: "", ratio: "", target: "0", met: verdict(steadyLost === 0) },
        { bench: "B6", metric: "B's LISTEN killed: lost / duplicated / id gaps", wes: `${fmt(killed.lost)} / ${fmt(killed.duplicates)} / ${fmt(killed.idGaps)} of ${fmt(killed.expected)}`, peer: "", ratio: "", target: "0 gaps", met: verdict(killed.lost === 0 && killed.duplicates === 0 && killed.idGaps === 0 && killed.expected === workflows * steps) },
        { bench: "B6", metric: "B's LISTEN killed: connection back after (ms); worst delivery (ms)", wes: `${fmt(restoredMs)}; ${fmt(killed.latency.max)}`, peer: "", ratio: "", target: "", met: "n/a" }
      ] satisfies ReadonlyArray<Row>
    } finally {
      await Promise.all(children.map((c) => c.stop()))
      await admin.end()
      await schema.drop()
    }
  }
}
