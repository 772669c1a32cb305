/** B3: GET /v1/workflow/{id} with a valid token, 50 connections, against a bare node:http server. */
import { alternate, type Benchmark, smokeWorkflow } from "./lib/bench.js"
import { start } from "./lib/child.js"
import { load, withCpu } from "./lib/load.js"
import { fmt, ratio, type Row, verdict } from "./lib/report.js"
import { mean } from "./lib/stats.js"

export const b3: Benchmark = {
  id: "B3",
  title: "read path: GET /v1/workflow/{id}",
  run: async (size) => {
    const wes = await start<{ url: string }>("servers/wes.ts", { BENCH_DISPATCH: "off" })
    const raw = await start<{ url: string }>("peers/raw-json.ts")
    try {
      const { token } = await wes.call<{ token: string }>("setup", { runners: ["http://127.0.0.1:9"] })
      const auth = { authorization: `Bearer ${token}` }
      const form = new FormData()
      form.append("name", "bench read")
      form.append("workflow_json", new Blob([JSON.stringify(smokeWorkflow())]), "w.json")
      const created = await (await fetch(`${wes.ready.url}/v1/workflow`, { method: "POST", headers: auth, body: form })).json() as { id: string }
      const path = `/v1/workflow/${created.id}`
      const body = await (await fetch(wes.ready.url + path, { headers: auth })).text()
      await raw.call("set", { path, body })
      const seconds = size === "full" ? 10 : 1
      const rounds = size === "full" ? 3 : 1
      await load({ url: wes.ready.url + path, connections: 50, durationSeconds: 1, headers: auth })
      const { a, b } = await alternate(
        rounds,
        () => withCpu(wes, () => load({ url: wes.ready.url + path, connections: 50, durationSeconds: seconds, headers: auth })),
        () => withCpu(raw, () => load({ url: raw.ready.url + path, connections: 50, durationSeconds: seconds }))
      )
      const wesCpu = mean(a.map((r) => r.cpuPerRequest))
      const rawCpu = mean(b.map((r) => r.cpuPerRequest))
      const wesRps = mean(a.map((r) => r.rps))
      const rawRps = mean(b.map((r) => r.rps))
      const wesP99 = Math.max(...a.map((r) => r.p99))
      const failures = a.reduce((n, r) => n + r.non2xx + r.errors, 0)
      return [
        { bench: "B3", metric: "requests/s (50 connections)", wes: fmt(wesRps), peer: fmt(rawRps), ratio: ratio(wesRps, rawRps), target: ">= 0.6x", met: verdict(wesRps >= 0.6 * rawRps) },
        { bench: "B3", metric: "server CPU per request (µs)", wes: fmt(wesCpu, 1), peer: fmt(rawCpu, 1), ratio: ratio(wesCpu, rawCpu), target: "", met: "n/a" },
        { bench: "B3", metric: "p99 latency (ms)", wes: fmt(wesP99), peer: fmt(Math.max(...b.map((r) => r.p99))), ratio: "", target: "<= 10 ms", met: verdict(wesP99 <= 10) },
        { bench: "B3", metric: "failed requests", wes: fmt(failures), peer: fmt(b.reduce((n, r) => n + r.non2xx + r.errors, 0)), ratio: "", target: "0", met: verdict(failures === 0) }
      ] satisfies ReadonlyArray<Row>
    } finally {
      await Promise.all([wes.stop(), raw.stop()])
    }
  }
}
