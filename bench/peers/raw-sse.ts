/**
 * B5's baseline: a bare node:http server-sent-events broadcaster. `GET /channel/<key>` subscribes;
 * `emit` publishes `steps` progress events on every channel, one every `intervalMs` per channel
 * (channels start at spread-out offsets, as independent runners do), each written to every
 * subscriber of its channel, and records when each was sent.
 */
import * as http from "node:http"
import { serve } from "../lib/child.js"

const now = (): number => performance.timeOrigin + performance.now()
const channels = new Map<string, Set<http.ServerResponse>>()
const sent = new Map<string, Array<number>>()

const frame = (id: number, event: string, data: string) => `id: ${id}\nevent: ${event}\ndata: ${data}\n\n`

const server = http.createServer((req, res) => {
  const m = /^\/channel\/([^/?]+)$/.exec(req.url ?? "")
  if (m === null) {
    res.writeHead(404).end()
    return
  }
  const key = m[1]!
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  let subs = channels.get(key)
  if (subs === undefined) channels.set(key, (subs = new Set()))
  subs.add(res)
  res.write(frame(1, "status", `{"id":"${key}","status":"running"}`))
  req.on("close", () => subs.delete(res))
})

const emitOn = (key: string, steps: number, intervalMs: number, offsetMs: number) =>
  new Promise<void>((resolve) => {
    const times = new Array<number>(steps + 1).fill(0)
    sent.set(key, times)
    let step = 0
    const tick = () => {
      step++
      const text = frame(step + 1, "progress", `{"node":"2","value":${step},"max":${steps}}`)
      times[step] = now()
      for (const res of channels.get(key) ?? []) res.write(text)
      if (step < steps) setTimeout(tick, intervalMs)
      else resolve()
    }
    setTimeout(tick, offsetMs)
  })

server.listen(0, "127.0.0.1", () => {
  const port = (server.address() as { port: number }).port
  serve({
    emit: async (args) => {
      const { keys, steps, intervalMs } = args as { readonly keys: ReadonlyArray<string>; readonly steps: number; readonly intervalMs: number }
      await Promise.all(keys.map((key, i) => emitOn(key, steps, intervalMs, (i * intervalMs) / keys.length)))
      return true
    },
    sent: () => Object.fromEntries(sent)
  }, { url: `http://127.0.0.1:${port}` })
})
process.on("SIGTERM", () => process.exit(0))
