/**
 * B10: webhooks. Workflows run on a fake runner with a webhook endpoint set (a node:http receiver
 * in this process answering 200 at once); every status change to queued, running and completed
 * is delivered. Figures: deliveries per second over the run, and the added latency from the
 * terminal status (the summary's `updated_at`, written by the transition) to the receiver
 * (p50/p99), on the memory and PostgreSQL stores. No peer.
 */
import { createServer } from "node:http"
import { type Benchmark, now, textWorkflow } from "./lib/bench.js"
import { start } from "./lib/child.js"
import { createSchema } from "./lib/pg.js"
import { fmt, type Row } from "./lib/report.js"
import { summarize } from "./lib/stats.js"

interface Arrival {
  readonly type: string
  readonly updatedAt: number
  readonly at: number
}

const receiver = async () => {
  const arrivals: Array<Arrival> = []
  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const at = now()
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { type: string; data: { updated_at: string } }
      arrivals.push({ type: body.type, updatedAt: Date.parse(body.data.updated_at), at })
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`,
    arrivals,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

const until = async (check: () => boolean, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error("B10: deliveries did not all arrive in time")
    await new Promise((r) => setTimeout(r, 10))
  }
}

export const b10: Benchmark = {
  id: "B10",
  title: "webhooks: deliveries/s and terminal status -> receiver latency",
  run: async (size) => {
    const n = size === "full" ? 1000 : 20
    const fakes = await start<{ urls: ReadonlyArray<string> }>("servers/fakes.ts", { FAKES: "2" })
    const schema = await createSchema()
    const rows: Array<Row> = []
    try {
      for (const store of ["memory", "postgres"] as const) {
        const hook = await receiver()
        const wes = await start<{ url: string }>("servers/wes.ts", {
          BENCH_WEBHOOKS: "on",
          ...(store === "postgres" ? { BENCH_STORE: "postgres", DATABASE_URL: schema.url } : {})
        })
        try {
          const { token } = await wes.call<{ token: string }>("setup", { runners: fakes.ready.urls })
          const auth = { authorization: `Bearer ${token}` }
          const put = await fetch(`${wes.ready.url}/v1/webhook`, {
            method: "PUT",
            headers: { ...auth, "content-type": "application/json" },
            body: JSON.stringify({ url: hook.url })
          })
          if (put.status !== 200) throw new Error(`B10: PUT /v1/webhook answered ${put.status}`)
          const body = JSON.stringify(textWorkflow("b10"))
          const t0 = now()
          let next = 0
          await Promise.all(Array.from({ length: 8 }, async () => {
            while (next < n) {
              next++
              const form = new FormData()
              form.append("name", "b10")
              form.append("workflow_json", new Blob([body]), "workflow.json")
              const res = await fetch(`${wes.ready.url}/v1/workflow`, { method: "POST", headers: auth, body: form })
              if (res.status !== 201) throw new Error(`B10: create answered ${res.status}`)
              await res.arrayBuffer()
            }
          }))
          await until(() => hook.arrivals.filter((a) => a.type === "workflow.completed").length >= n, 300_000)
          const wall = (Math.max(...hook.arrivals.map((a) => a.at)) - t0) / 1000
          const terminal = summarize(hook.arrivals.filter((a) => a.type === "workflow.completed").map((a) => a.at - a.updatedAt))
          rows.push(
            { bench: "B10", metric: `${store}: deliveries/s (queued, running, completed of ${fmt(n)} workflows)`, wes: fmt(hook.arrivals.length / wall, 0), peer: "", ratio: "", target: "", met: "n/a" },
            { bench: "B10", metric: `${store}: p50 terminal status -> receiver (ms)`, wes: fmt(terminal.p50, 1), peer: "", ratio: "", target: "", met: "n/a" },
            { bench: "B10", metric: `${store}: p99 terminal status -> receiver (ms)`, wes: fmt(terminal.p99, 1), peer: "", ratio: "", target: "", met: "n/a" }
          )
        } finally {
          await wes.stop()
          await hook.close()
        }
      }
      return rows
    } finally {
      await fakes.stop()
      await schema.drop()
    }
  }
}
