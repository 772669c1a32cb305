/**
 * SSE subscribers for B5/B6, in their own process so the server under test never shares their
 * event loop. Each subscription records, per progress step (`data.value`), when it arrived (wall
 * clock, sub-millisecond, comparable across processes) and which event ids it saw.
 * IPC:
 *   open({subscriptions: [{url, headers, key}], steps})  opens them all; answers once each has
 *                                                         received its first event
 *   results({sent: {key: [t1..tSteps]}})                   latency percentiles, lost and
 *                                                         duplicated events, id gaps
 *   samples({sent})                                        every [step, latency, arrival] seen
 *                                                         (for probes of where a tail comes from)
 *   close()                                                ends every connection
 */
import * as http from "node:http"
import { serve } from "../lib/child.js"
import { summarize } from "../lib/stats.js"

interface Subscription {
  readonly key: string
  readonly arrivals: Float64Array
  received: number
  duplicates: number
  lastId: number
  idGaps: number
  request: http.ClientRequest | undefined
}

const now = (): number => performance.timeOrigin + performance.now()
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity })
const subscriptions: Array<Subscription> = []
const VALUE = /"value":(\d+)/

const open = (url: string, headers: Record<string, string>, key: string, steps: number) =>
  new Promise<void>((resolve, reject) => {
    const sub: Subscription = { key, arrivals: new Float64Array(steps + 1), received: 0, duplicates: 0, lastId: 0, idGaps: 0, request: undefined }
    subscriptions.push(sub)
    let first = true
    let buffer = ""
    const req = http.get(url, { agent, headers: { accept: "text/event-stream", ...headers } }, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`${url}: ${res.statusCode}`))
        res.resume()
        return
      }
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        const at = now()
        buffer += chunk
        let end = buffer.indexOf("\n\n")
        while (end !== -1) {
          const frame = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          end = buffer.indexOf("\n\n")
          if (frame.startsWith(":")) continue
          const idStart = frame.indexOf("id: ")
          if (idStart !== -1) {
            const id = Number(frame.slice(idStart + 4, frame.indexOf("\n", idStart)))
            if (sub.lastId !== 0 && id !== sub.lastId + 1 && id > sub.lastId) sub.idGaps++
            if (id > sub.lastId) sub.lastId = id
          }
          if (first) {
            first = false
            resolve()
          }
          if (frame.includes("event: progress")) {
            const m = VALUE.exec(frame)
            const step = m === null ? -1 : Number(m[1])
            if (step >= 1 && step <= steps) {
              if (sub.arrivals[step] !== 0) sub.duplicates++
              else {
                sub.arrivals[step] = at
                sub.received++
              }
            }
          }
        }
      })
    })
    req.on("error", (e) => (first ? reject(e) : undefined))
    sub.request = req
  })

/** Calls `f` for each step the server sent to each subscription (`sent`: per key, the send time of each step), with its arrival (0: never). */
const forEachSent = (sent: Record<string, ReadonlyArray<number>>, f: (step: number, sentAt: number, at: number) => void) => {
  for (const sub of subscriptions) {
    const times = sent[sub.key] ?? []
    for (let step = 1; step < sub.arrivals.length; step++) {
      const sentAt = times[step]
      if (sentAt !== undefined && sentAt !== 0) f(step, sentAt, sub.arrivals[step]!)
    }
  }
}

serve({
  open: async (args) => {
    const { subscriptions: wanted, steps, concurrency = 200 } = args as {
      readonly subscriptions: ReadonlyArray<{ readonly url: string; readonly headers: Record<string, string>; readonly key: string }>
      readonly steps: number
      readonly concurrency?: number
    }
    // Opened in waves, so the server's accept queue is not flooded.
    for (let i = 0; i < wanted.length; i += concurrency) {
      await Promise.all(wanted.slice(i, i + concurrency).map((s) => open(s.url, s.headers, s.key, steps)))
    }
    return subscriptions.length
  },
  results: (args) => {
    const { sent } = args as { readonly sent: Record<string, ReadonlyArray<number>> }
    const latencies: Array<number> = []
    let expected = 0
    let late = 0
    forEachSent(sent, (_step, sentAt, at) => {
      expected++
      if (at === 0) return
      latencies.push(at - sentAt)
      if (at - sentAt > 1000) late++
    })
    const received = latencies.length
    const duplicates = subscriptions.reduce((n, sub) => n + sub.duplicates, 0)
    const idGaps = subscriptions.reduce((n, sub) => n + sub.idGaps, 0)
    return { subscriptions: subscriptions.length, expected, received, lost: expected - received, duplicates, idGaps, late, latency: summarize(latencies) }
  },
  /** Every (step, latency ms, arrival time) a subscription saw, for probes of where a tail comes from. */
  samples: (args) => {
    const { sent } = args as { readonly sent: Record<string, ReadonlyArray<number>> }
    const out: Array<[number, number, number]> = []
    forEachSent(sent, (step, sentAt, at) => at !== 0 && out.push([step, at - sentAt, at]))
    return out
  },
  close: () => {
    for (const sub of subscriptions) sub.request?.destroy()
    subscriptions.length = 0
    return true
  }
}, {})
process.on("SIGTERM", () => process.exit(0))
