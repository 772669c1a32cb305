/**
 * B2: n accepted workflows stored first, then the dispatcher starts and the clock runs until all
 * are completed, over 8 fake runners that finish at once (real HTTP + WebSocket per workflow).
 * Peer: graphile-worker burning down n no-op jobs added in one statement.
 */
import { type Benchmark, now, sleep, textWorkflow } from "./lib/bench.js"
import { type Child, start } from "./lib/child.js"
import { createSchema } from "./lib/pg.js"
import { fmt, ratio, type Row, verdict } from "./lib/report.js"

const burnDown = async (wes: Child<{ url: string }>, n: number) => {
  await wes.call("seed", { n, workflow: textWorkflow("b2") })
  const t0 = now()
  await wes.call("startDispatcher")
  for (;;) {
    const left = await wes.call<number>("unfinished")
    if (left === 0) break
    await sleep(50)
  }
  return n / ((now() - t0) / 1000)
}

export const b2: Benchmark = {
  id: "B2",
  title: "dispatch throughput: burn-down over 8 runners",
  run: async (size) => {
    const n = size === "full" ? 20_000 : 200
    const rows: Array<Row> = []
    const schema = await createSchema()
    const graphileSchema = await createSchema("graphile_bench")
    await graphileSchema.drop()
    try {
      const results: Record<string, number> = {}
      const submissions: Record<string, { total: number; unique: number }> = {}
      for (const store of ["memory", "postgres"] as const) {
        const fakes = await start<{ urls: ReadonlyArray<string> }>("servers/fakes.ts", { FAKES: "8" })
        const wes = await start<{ url: string }>("servers/wes.ts", {
          BENCH_DISPATCH: "off",
          ...(store === "postgres" ? { BENCH_STORE: "postgres", DATABASE_URL: schema.url } : {})
        })
        try {
          await wes.call("setup", { runners: fakes.ready.urls })
          results[store] = await burnDown(wes, n)
          submissions[store] = await fakes.call("submissions")
        } finally {
          await Promise.all([wes.stop(), fakes.stop()])
        }
      }
      const graphile = await start<Record<string, never>>("peers/graphile.ts", { DATABASE_URL: schema.url, GRAPHILE_SCHEMA: graphileSchema.name, GRAPHILE_CONCURRENCY: "16" })
      try {
        const { ms } = await graphile.call<{ ms: number }>("burnDown", { n })
        results["graphile"] = n / (ms / 1000)
      } finally {
        await graphile.stop()
      }
      const g = results["graphile"]!
      rows.push(
        { bench: "B2", metric: `memory: workflows/s (${fmt(n)})`, wes: fmt(results["memory"]!), peer: fmt(g), ratio: ratio(results["memory"]!, g), target: ">= 3,000/s", met: verdict(results["memory"]! >= 3000) },
        { bench: "B2", metric: `postgres: workflows/s (${fmt(n)})`, wes: fmt(results["postgres"]!), peer: fmt(g), ratio: ratio(results["postgres"]!, g), target: ">= 0.5x peer", met: verdict(results["postgres"]! >= 0.5 * g) }
      )
      for (const store of ["memory", "postgres"]) {
        const s = submissions[store]!
        rows.push({ bench: "B2", metric: `${store}: prompts received (total / unique)`, wes: `${fmt(s.total)} / ${fmt(s.unique)}`, peer: "", ratio: "", target: `${fmt(n)} / ${fmt(n)}`, met: verdict(s.total === n && s.unique === n) })
      }
      return rows
    } finally {
      await schema.drop()
    }
  }
}
