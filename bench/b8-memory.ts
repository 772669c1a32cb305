/**
 * B8: memory of one server. Idle: the `wes` command itself (`node packages/http-node/dist/bin.js
 * serve`, as deployed, memory store), its RSS after it has answered a request and sat idle.
 * Loaded: the benchmark server holding 100,000 workflows in the memory store.
 */
import { spawn } from "node:child_process"
import * as net from "node:net"
import * as path from "node:path"
import { rssOf } from "./b5-sse.js"
import { type Benchmark, sleep, smokeWorkflow } from "./lib/bench.js"
import { repoRoot, start } from "./lib/child.js"
import { fmt, type Row, verdict } from "./lib/report.js"

const MB = 1024 * 1024
const SETTLE_MS = 10_000
const IDLE_MS = 5_000

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = net.createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as net.AddressInfo
      probe.close(() => resolve(port))
    })
  })

/** RSS (MB) of an idle `wes serve`: started, asked once for /healthz, then left alone. */
const idleWesServe = async (idleMs: number): Promise<number> => {
  const port = await freePort()
  const child = spawn(process.execPath, [path.join(repoRoot, "packages/http-node/dist/bin.js"), "serve"], {
    env: { ...process.env, WES_PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"]
  })
  try {
    let out = ""
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on("data", (d: Buffer) => {
        out += d.toString()
        if (out.includes("wes serve listening")) resolve()
      })
      child.once("exit", (code) => reject(new Error(`wes serve exited (${code}): ${out.slice(-500)}`)))
    })
    await (await fetch(`http://127.0.0.1:${port}/healthz`)).text()
    await sleep(idleMs)
    return rssOf(child.pid!).now
  } finally {
    child.kill("SIGTERM")
  }
}

export const b8: Benchmark = {
  id: "B8",
  title: "memory: idle wes serve, and 100,000 stored workflows",
  run: async (size) => {
    const n = size === "full" ? 100_000 : 2_000
    const idle = await idleWesServe(size === "full" ? IDLE_MS : 1000)
    const wes = await start<{ url: string }>("servers/wes.ts", { BENCH_DISPATCH: "off" })
    try {
      await wes.call("setup", { runners: ["http://127.0.0.1:9"] })
      await wes.call("seed", { n, workflow: smokeWorkflow() })
      // Right after the burst of creates the heap still holds the pages it grew into; V8 gives
      // back what it can once the process is idle. The target is the steady state: measured
      // after SETTLE_MS idle, and the figure right after the burst is shown too.
      const burst = await wes.call<NodeJS.MemoryUsage>("memory")
      await sleep(size === "full" ? SETTLE_MS : 1000)
      const full = await wes.call<NodeJS.MemoryUsage>("memory")
      return [
        { bench: "B8", metric: "RSS, idle wes serve (MB)", wes: fmt(idle), peer: "", ratio: "", target: "<= 100 MB", met: verdict(idle <= 100) },
        { bench: "B8", metric: `RSS right after storing ${fmt(n)} workflows, memory store (MB)`, wes: fmt(burst.rss / MB), peer: "", ratio: "", target: "", met: "n/a" },
        { bench: "B8", metric: `RSS with ${fmt(n)} workflows, ${SETTLE_MS / 1000} s later (MB)`, wes: fmt(full.rss / MB), peer: "", ratio: "", target: size === "full" ? "<= 400 MB" : "(tiny run)", met: size === "full" ? verdict(full.rss <= 400 * MB) : "n/a" },
        { bench: "B8", metric: `heap used with ${fmt(n)} workflows (MB)`, wes: fmt(full.heapUsed / MB), peer: "", ratio: "", target: "", met: "n/a" }
      ] satisfies ReadonlyArray<Row>
    } finally {
      await wes.stop()
    }
  }
}
