/**
 * B2: n accepted workflows stored first, then the dispatcher starts and the clock runs until all
 * are completed, over 8 fake runners that finish at once (real HTTP + WebSocket per workflow).
 * Also WES's CPU per workflow over the burn-down (the WES process alone). Peer: graphile-worker
 * burning down n no-op jobs added in one statement, unbatched (its default) and batched (local
 * queue and batched completions).
 */
import { type Benchmark, now, sleep, textWorkflow } from "./lib/bench.js"
import { type Child, start } from "./lib/child.js"
import { createSchema } from "./lib/pg.js"
import { fmt, ratio, type Row, verdict } from "./lib/report.js"

/**
 * Workflows per second of the burn-down, and WES's CPU per workflow (ms) from the create (the use
 * case, without HTTP: B4 measures the edge) to completed.
 */
export const burnDown = async (wes: Child<{ url: string }>, n: number) => {
  const cpu0 = await wes.call<number>("cpu")
  await wes.call("seed", { n, workflow: textWorkflow("b2") })
  const t0 = now()
  await wes.call("startDispatcher")
  for (;;) {
    const left = await wes.call<number>("unfinished")
    if (left === 0) break
    await sleep(50)
  }
  const seconds = (now() - t0) / 1000
  return { perSecond: n / seconds, cpuMs: (await wes.call<number>("cpu") - cpu0) / n / 1000 }
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
      const cpu: Record<string, number> = {}
      const submissions: Record<string, { total: number; unique: number }> = {}
      for (const store of ["memory", "postgres"] as const) {
        const fakes = await start<{ urls: ReadonlyArray<string> }>("servers/fakes.ts", { FAKES: "8" })
        const wes = await start<{ url: string }>("servers/wes.ts", {
          BENCH_DISPATCH: "off",
          ...(store === "postgres" ? { BENCH_STORE: "postgres", DATABASE_URL: schema.url } : {})
        })
        try {
          await wes.call("setup", { runners: fakes.ready.urls })
          const run = await burnDown(wes, n)
          results[store] = run.perSecond
          cpu[store] = run.cpuMs
          submissions[store] = await fakes.call("submissions")
        } finally {
          await Promise.all([wes.stop(), fakes.stop()])
        }
      }
      for (const batched of ["off", "on"] as const) {
        const graphile = await start<Record<string, never>>("peers/graphile.ts", {
          DATABASE_URL: schema.url,
          GRAPHILE_SCHEMA: graphileSchema.name,
          GRAPHILE_CONCURRENCY: "16",
          GRAPHILE_BATCHED: batched
        })
        try {
          const cpu0 = await graphile.call<number>("cpu")
          const { ms } = await graphile.call<{ ms: number }>("burnDown", { n })
          results[`graphile ${batched}`] = n / (ms / 1000)
          cpu[`graphile ${batched}`] = (await graphile.call<number>("cpu") - cpu0) / n / 1000
        } finally {
          await graphile.stop()
        }
      }
      const g = results["graphile off"]!
      const gb = results["graphile on"]!
      const mem = results["memory"]!
      const pg = results["postgres"]!
      rows.push(
        { bench: "B2", metric: `memory: workflows/s (${fmt(n)}), peer unbatched`, wes: fmt(mem), peer: fmt(g), ratio: ratio(mem, g), target: ">= 5,000/s", met: verdict(mem >= 5000) },
        { bench: "B2", metric: `postgres: workflows/s (${fmt(n)}), peer unbatched`, wes: fmt(pg), peer: fmt(g), ratio: ratio(pg, g), target: ">= 1.0x peer", met: verdict(pg >= g) },
        { bench: "B2", metric: "postgres: workflows/s, peer batched (local queue, batched completions)", wes: fmt(pg), peer: fmt(gb), ratio: ratio(pg, gb), target: ">= 0.5x peer", met: verdict(pg >= 0.5 * gb) },
        { bench: "B2", metric: "memory: WES CPU per workflow, create -> completed (ms)", wes: fmt(cpu["memory"]!, 2), peer: fmt(cpu["graphile off"]!, 2), ratio: "", target: "<= 1 ms", met: verdict(cpu["memory"]! <= 1) },
        { bench: "B2", metric: "postgres: WES CPU per workflow (ms); peer batched", wes: fmt(cpu["postgres"]!, 2), peer: fmt(cpu["graphile on"]!, 2), ratio: "", target: "", met: "n/a" }
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
