/**
 * B5: server-sent-events fan-out. 10,000 subscriptions over 100 workflows, each workflow running
 * on its own fake runner and reporting 10 progress steps a second for 30 s. Delivery latency is
 * from the fake runner sending a `progress` message to a subscriber receiving it; every
 * subscriber must receive every step. Peer: a bare node:http SSE broadcaster, same subscribers,
 * same rate. RSS is the server process's peak resident set (VmHWM).
 */
import * as fs from "node:fs"
import { type Benchmark, sleep, sleepWorkflow } from "./lib/bench.js"
import { start } from "./lib/child.js"
import { fmt, ratio, type Row, verdict } from "./lib/report.js"
import type { Summary } from "./lib/stats.js"

/** What the SSE subscribers' process (`clients/sse.ts`) answers to `results`. */
export interface SseResults {
  readonly subscriptions: number
  readonly expected: number
  readonly received: number
  readonly lost: number
  readonly duplicates: number
  readonly idGaps: number
  readonly late: number
  readonly latency: Summary
}

/** Peak and current resident set of a process, in MB (Linux). */
export const rssOf = (pid: number): { readonly peak: number; readonly now: number } => {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN)
  return { peak: kb("VmHWM") / 1024, now: kb("VmRSS") / 1024 }
}

export const b5: Benchmark = {
  id: "B5",
  title: "SSE fan-out: subscriptions over running workflows",
  run: async (size) => {
    // BENCH_B5=<workflows>,<subscribers per workflow>,<seconds> overrides the size.
    const custom = process.env["BENCH_B5"]?.split(",").map(Number)
    const workflows = custom?.[0] ?? (size === "full" ? 100 : 5)
    const perWorkflow = custom?.[1] ?? (size === "full" ? 100 : 10)
    const seconds = custom?.[2] ?? (size === "full" ? 30 : 2)
    const rate = 10
    const steps = seconds * rate
    const subs = workflows * perWorkflow

    // WES: one fake runner per workflow, the dispatcher started once every subscriber listens.
    const fakes = await start<{ urls: ReadonlyArray<string> }>("servers/fakes.ts", { FAKES: String(workflows) })
    const wes = await start<{ url: string }>("servers/wes.ts", { BENCH_DISPATCH: "off" })
    let wesResult: SseResults
    let wesPeak: number
    try {
      const { token } = await wes.call<{ token: string }>("setup", { runners: fakes.ready.urls })
      const auth = { authorization: `Bearer ${token}` }
      const ids: Array<string> = []
      for (let i = 0; i < workflows; i++) {
        const form = new FormData()
        form.append("name", `b5-${i}`)
        form.append("workflow_json", new Blob([JSON.stringify(sleepWorkflow(seconds, steps, i))]), "w.json")
        const res = await fetch(`${wes.ready.url}/v1/workflow`, { method: "POST", headers: auth, body: form })
        if (res.status !== 201) throw new Error(`create: ${res.status} ${await res.text()}`)
        ids.push(((await res.json()) as { id: string }).id)
      }
      const clients = await start<Record<string, never>>("clients/sse.ts")
      try {
        await clients.call("open", {
          steps,
          subscriptions: Array.from({ length: subs }, (_, i) => {
            const id = ids[i % workflows]!
            return { url: `${wes.ready.url}/v1/workflow/${id}/subscribe`, headers: auth, key: id }
          })
        })
        let peak = 0
        const sampler = setInterval(() => (peak = Math.max(peak, rssOf(wes.process.pid!).now)), 250)
        await wes.call("startDispatcher")
        const deadline = Date.now() + (seconds + 120) * 1000
        while ((await wes.call<number>("unfinished")) > 0) {
          if (Date.now() > deadline) throw new Error("B5: workflows did not finish")
          await sleep(250)
        }
        await sleep(500)
        clearInterval(sampler)
        wesPeak = Math.max(peak, rssOf(wes.process.pid!).peak)
        // The fake's send time of each step, by workflow.
        const arrivals = await fakes.call<Record<string, number>>("progressSent")
        const sent: Record<string, Array<number>> = {}
        for (const id of ids) {
          const detail = (await (await fetch(`${wes.ready.url}/v1/workflow/${id}`, { headers: auth })).json()) as { prompt_id: string | null; status: string }
          if (detail.status !== "completed") throw new Error(`B5: workflow ${id} ended ${detail.status}`)
          const times = new Array<number>(steps + 1).fill(0)
          for (let s = 1; s <= steps; s++) times[s] = arrivals[`${detail.prompt_id}:${s}`] ?? 0
          sent[id] = times
        }
        wesResult = await clients.call<SseResults>("results", { sent })
      } finally {
        await clients.stop()
      }
    } finally {
      await Promise.all([wes.stop(), fakes.stop()])
    }

    // The bare broadcaster.
    const raw = await start<{ url: string }>("peers/raw-sse.ts")
    let rawResult: SseResults
    let rawPeak: number
    try {
      const keys = Array.from({ length: workflows }, (_, i) => `w${i}`)
      const clients = await start<Record<string, never>>("clients/sse.ts")
      try {
        await clients.call("open", {
          steps,
          subscriptions: Array.from({ length: subs }, (_, i) => ({ url: `${raw.ready.url}/channel/${keys[i % workflows]}`, headers: {}, key: keys[i % workflows] }))
        })
        await raw.call("emit", { keys, steps, intervalMs: 1000 / rate })
        await sleep(500)
        rawPeak = rssOf(raw.process.pid!).peak
        rawResult = await clients.call<SseResults>("results", { sent: await raw.call("sent") })
      } finally {
        await clients.stop()
      }
    } finally {
      await raw.stop()
    }

    const label = `${fmt(subs)} subscriptions, ${workflows} workflows x ${rate}/s x ${seconds} s`
    return [
      { bench: "B5", metric: `peak RSS (MB), ${label}`, wes: fmt(wesPeak), peer: fmt(rawPeak), ratio: ratio(wesPeak, rawPeak), target: "<= 200 MB", met: verdict(wesPeak <= 200) },
      { bench: "B5", metric: "delivery p50 (ms)", wes: fmt(wesResult.latency.p50, 1), peer: fmt(rawResult.latency.p50, 1), ratio: ratio(wesResult.latency.p50, rawResult.latency.p50), target: "", met: "n/a" },
      { bench: "B5", metric: "delivery p99 (ms)", wes: fmt(wesResult.latency.p99, 1), peer: fmt(rawResult.latency.p99, 1), ratio: ratio(wesResult.latency.p99, rawResult.latency.p99), target: "<= 1.5x peer", met: verdict(wesResult.latency.p99 <= 1.5 * rawResult.latency.p99) },
      { bench: "B5", metric: "delivery max (ms)", wes: fmt(wesResult.latency.max, 1), peer: fmt(rawResult.latency.max, 1), ratio: "", target: "", met: "n/a" },
      { bench: "B5", metric: "events delivered / expected", wes: `${fmt(wesResult.received)} / ${fmt(wesResult.expected)}`, peer: `${fmt(rawResult.received)} / ${fmt(rawResult.expected)}`, ratio: "", target: "all", met: verdict(wesResult.lost === 0 && wesResult.expected === subs * steps) },
      { bench: "B5", metric: "duplicated events, id gaps", wes: `${fmt(wesResult.duplicates)}, ${fmt(wesResult.idGaps)}`, peer: `${fmt(rawResult.duplicates)}, ${fmt(rawResult.idGaps)}`, ratio: "", target: "0, 0", met: verdict(wesResult.duplicates === 0 && wesResult.idGaps === 0) }
    ] satisfies ReadonlyArray<Row>
  }
}
