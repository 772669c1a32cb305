/** B8: memory of one server: idle, then holding 100,000 workflows in the memory store. */
import { type Benchmark, sleep, smokeWorkflow } from "./lib/bench.js"
import { start } from "./lib/child.js"
import { fmt, type Row, verdict } from "./lib/report.js"

const MB = 1024 * 1024
const SETTLE_MS = 10_000

export const b8: Benchmark = {
  id: "B8",
  title: "memory: idle server, and 100,000 stored workflows",
  run: async (size) => {
    const n = size === "full" ? 100_000 : 2_000
    const wes = await start<{ url: string }>("servers/wes.ts", { BENCH_DISPATCH: "off" })
    try {
      await wes.call("setup", { runners: ["http://127.0.0.1:9"] })
      await fetch(`${wes.ready.url}/healthz`)
      const idle = await wes.call<NodeJS.MemoryUsage>("memory")
      await wes.call("seed", { n, workflow: smokeWorkflow() })
      // Right after the burst of creates the heap still holds the pages it grew into; V8 gives
      // back what it can once the process is idle. The target is the steady state: measured
      // after SETTLE_MS idle, and the figure right after the burst is shown too.
      const burst = await wes.call<NodeJS.MemoryUsage>("memory")
      await sleep(size === "full" ? SETTLE_MS : 1000)
      const full = await wes.call<NodeJS.MemoryUsage>("memory")
      return [
        { bench: "B8", metric: "RSS, idle server (MB)", wes: fmt(idle.rss / MB), peer: "", ratio: "", target: "<= 120 MB", met: verdict(idle.rss <= 120 * MB) },
        { bench: "B8", metric: `RSS right after storing ${fmt(n)} workflows, memory store (MB)`, wes: fmt(burst.rss / MB), peer: "", ratio: "", target: "", met: "n/a" },
        { bench: "B8", metric: `RSS with ${fmt(n)} workflows, ${SETTLE_MS / 1000} s later (MB)`, wes: fmt(full.rss / MB), peer: "", ratio: "", target: size === "full" ? "<= 400 MB" : "(tiny run)", met: size === "full" ? verdict(full.rss <= 400 * MB) : "n/a" },
        { bench: "B8", metric: `heap used with ${fmt(n)} workflows (MB)`, wes: fmt(full.heapUsed / MB), peer: "", ratio: "", target: "", met: "n/a" }
      ] satisfies ReadonlyArray<Row>
    } finally {
      await wes.stop()
    }
  }
}
