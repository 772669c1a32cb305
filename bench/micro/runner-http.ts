/**
 * What one HTTP call to a runner costs in CPU, by client: the numbers behind the runner client's
 * choice (docs/decisions.md, "The runner client"). A local HTTP server answers a ComfyUI-sized
 * `/queue` JSON; each client makes the same calls, 8 at a time, in alternating rounds; CPU is
 * `process.cpuUsage()` of this process (client and server share it, so the server's part is the
 * same in every row and the differences are the clients').
 *
 *   pnpm --filter @wes/bench exec tsx micro/runner-http.ts [calls per round = 4000]
 */
import * as http from "node:http"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { Agent, request } from "undici"

const body = JSON.stringify({ queue_running: [[1, "a", {}, {}, []]], queue_pending: [] })
const server = http.createServer((_, res) => {
  res.writeHead(200, { "content-type": "application/json" })
  res.end(body)
})
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/queue`
const runtime = ManagedRuntime.make(NodeHttpClient.layerUndici)
const client = await runtime.runPromise(HttpClient.HttpClient)
const agent = new Agent({ keepAliveTimeout: 10_000, connections: 16 })

const viaPlatform = (timeout: boolean) => {
  const call = client.execute(HttpClientRequest.get(url).pipe(HttpClientRequest.acceptJson)).pipe(
    Effect.flatMap((r) => r.json),
    timeout ? Effect.timeout("30 seconds") : (e) => e
  )
  return () => runtime.runPromise(call)
}
const viaUndiciEffect = () => {
  const call = Effect.tryPromise({
    try: async (signal) => {
      const r = await request(url, { dispatcher: agent, signal, headersTimeout: 30_000, bodyTimeout: 30_000, headers: { accept: "application/json" } })
      return JSON.parse(await r.body.text()) as unknown
    },
    catch: (e) => e
  })
  return () => runtime.runPromise(call)
}
const viaUndiciEffectNoSignal = () => {
  const call = Effect.tryPromise({
    try: async () => {
      const r = await request(url, { dispatcher: agent, headersTimeout: 30_000, bodyTimeout: 30_000, headers: { accept: "application/json" } })
      return JSON.parse(await r.body.text()) as unknown
    },
    catch: (e) => e
  })
  return () => runtime.runPromise(call)
}
const viaUndici = () => async () => {
  const r = await request(url, { dispatcher: agent, headersTimeout: 30_000, bodyTimeout: 30_000, headers: { accept: "application/json" } })
  return JSON.parse(await r.body.text()) as unknown
}
const viaFetch = () => async () => (await fetch(url, { headers: { accept: "application/json" } })).json()

const clients: Record<string, () => () => Promise<unknown>> = {
  "effect/http HttpClient (undici) + Effect.timeout": () => viaPlatform(true),
  "effect/http HttpClient (undici), no Effect.timeout": () => viaPlatform(false),
  "undici request in Effect.tryPromise (abort signal, undici timeouts)": viaUndiciEffect,
  "undici request in Effect.tryPromise (no abort signal, undici timeouts)": viaUndiciEffectNoSignal,
  "undici request, plain promise": viaUndici,
  "fetch": viaFetch
}

const calls = Number(process.argv[2] ?? 4000)
const round = async (make: () => () => Promise<unknown>) => {
  const call = make()
  let left = calls
  const worker = async () => {
    while (left-- > 0) await call()
  }
  const t0 = process.cpuUsage()
  await Promise.all(Array.from({ length: 8 }, worker))
  const d = process.cpuUsage(t0)
  return (d.user + d.system) / calls
}

const results = new Map<string, Array<number>>()
for (const make of Object.values(clients)) await round(make) // warm-up
for (let r = 0; r < 5; r++) {
  for (const [name, make] of Object.entries(clients)) {
    const us = await round(make)
    results.set(name, [...(results.get(name) ?? []), us])
  }
}
const median = (xs: Array<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
console.log(`| client | CPU µs per call (median of 5 rounds of ${calls}, 8 at a time; server included) |\n|---|---|`)
for (const [name, xs] of results) console.log(`| ${name} | ${median(xs).toFixed(0)} |`)
server.close()
await agent.close()
await runtime.dispose()
