/**
 * B1: serial submissions, each timed from sending `POST /v1/workflow` (multipart, 5 KB workflow)
 * until the fake runner receives its `/prompt`; memory and PostgreSQL stores. Peer:
 * graphile-worker, add-job -> task start, on the same PostgreSQL.
 */
import { type Benchmark, now, paddedWorkflow } from "./lib/bench.js"
import { type Child, start } from "./lib/child.js"
import { createSchema } from "./lib/pg.js"
import { fmt, ratio, type Row, verdict } from "./lib/report.js"
import { summarize } from "./lib/stats.js"

type Waiters = Map<string, (at: number) => void>

const listen = (child: Child<unknown>, type: string): { readonly wait: (id: string) => Promise<number> } => {
  const seen = new Map<string, number>()
  const waiters: Waiters = new Map()
  child.process.on("message", (m: { type?: string; id?: string; at?: number }) => {
    if (m.type !== type || m.id === undefined || m.at === undefined) return
    const w = waiters.get(m.id)
    if (w !== undefined) {
      waiters.delete(m.id)
      w(m.at)
    } else seen.set(m.id, m.at)
  })
  return {
    wait: (id) => {
      const at = seen.get(id)
      if (at !== undefined) {
        seen.delete(id)
        return Promise.resolve(at)
      }
      return new Promise((resolve) => waiters.set(id, resolve))
    }
  }
}

export const b1: Benchmark = {
  id: "B1",
  title: "latency: POST /v1/workflow -> runner receives /prompt (serial)",
  run: async (size) => {
    const n = size === "full" ? 1000 : 20
    const block = size === "full" ? 100 : 10
    const fakes = await start<{ urls: ReadonlyArray<string> }>("servers/fakes.ts", { FAKES: "1", FAKES_PUSH: "on" })
    const arrivals = listen(fakes, "arrival")
    const schema = await createSchema()
    const graphileSchema = await createSchema("graphile_bench")
    await graphileSchema.drop()
    const memory = await start<{ url: string }>("servers/wes.ts", {})
    const postgres = await start<{ url: string }>("servers/wes.ts", { BENCH_STORE: "postgres", DATABASE_URL: schema.url })
    const graphile = await start<Record<string, never>>("peers/graphile.ts", { DATABASE_URL: schema.url, GRAPHILE_SCHEMA: graphileSchema.name, GRAPHILE_CONCURRENCY: "1" })
    const starts = listen(graphile, "started")
    try {
      await graphile.call("start")
      const body = JSON.stringify(paddedWorkflow(5 * 1024))
      const submitter = async (wes: Child<{ url: string }>) => {
        const { token } = await wes.call<{ token: string }>("setup", { runners: fakes.ready.urls })
        const auth = { authorization: `Bearer ${token}` }
        return async () => {
          const form = new FormData()
          form.append("name", "b1")
          form.append("workflow_json", new Blob([body]), "workflow.json")
          const t0 = now()
          const res = await fetch(`${wes.ready.url}/v1/workflow`, { method: "POST", headers: auth, body: form })
          const answered = now()
          const { id } = await res.json() as { id: string }
          const arrived = await arrivals.wait(id)
          return { latency: arrived - t0, answer: answered - t0 }
        }
      }
      const sides = {
        memory: await submitter(memory),
        postgres: await submitter(postgres),
        graphile: async () => {
          const id = crypto.randomUUID()
          const t0 = now()
          await graphile.call("addJob", { id })
          const started = await starts.wait(id)
          return { latency: started - t0, answer: Number.NaN }
        }
      }
      const results: Record<keyof typeof sides, Array<{ latency: number; answer: number }>> = { memory: [], postgres: [], graphile: [] }
      for (const side of Object.keys(sides) as Array<keyof typeof sides>) for (let i = 0; i < 10; i++) await sides[side]()
      // Alternating blocks, so machine drift hits every side.
      for (let done = 0; done < n; done += block) {
        for (const side of Object.keys(sides) as Array<keyof typeof sides>) {
          for (let i = 0; i < block; i++) results[side].push(await sides[side]())
        }
      }
      const g = summarize(results.graphile.map((r) => r.latency))
      const rows: Array<Row> = []
      for (const [store, target] of [["memory", { p50: 2, p99: 8 }], ["postgres", { p50: 5, p99: 15 }]] as const) {
        const s = summarize(results[store].map((r) => r.latency))
        const answer = summarize(results[store].map((r) => r.answer))
        rows.push(
          // Memory: also below graphile-worker's own add -> start in the same run.
          {
            bench: "B1",
            metric: `${store}: p50 submit -> /prompt (ms)`,
            wes: fmt(s.p50, 2),
            peer: fmt(g.p50, 2),
            ratio: ratio(s.p50, g.p50),
            target: store === "memory" ? `<= ${target.p50} ms and < peer` : `<= ${target.p50} ms`,
            met: verdict(s.p50 <= target.p50 && (store !== "memory" || s.p50 < g.p50))
          },
          { bench: "B1", metric: `${store}: p99 (ms)`, wes: fmt(s.p99, 2), peer: fmt(g.p99, 2), ratio: ratio(s.p99, g.p99), target: `<= ${target.p99} ms`, met: verdict(s.p99 <= target.p99) },
          { bench: "B1", metric: `${store}: max (ms)`, wes: fmt(s.max, 2), peer: fmt(g.max, 2), ratio: "", target: "", met: "n/a" },
          { bench: "B1", metric: `${store}: p50 until the 201 (ms)`, wes: fmt(answer.p50, 2), peer: "", ratio: "", target: "", met: "n/a" }
        )
      }
      rows.push({ bench: "B1", metric: "submissions measured per side", wes: fmt(n), peer: fmt(n), ratio: "", target: "1,000", met: verdict(n >= 1000) })
      return rows
    } finally {
      await Promise.all([memory.stop(), postgres.stop(), graphile.stop(), fakes.stop()])
      await schema.drop()
    }
  }
}
