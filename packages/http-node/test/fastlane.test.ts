/**
 * The fast lane (FastLane.ts) must be invisible: the same requests sent to a server with it and
 * to one without it, over one store, get the same status, headers, body and log line.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import { AccountService, PlatformLive, RunnerProbe, TierPolicy, useCasesLayer } from "@wes/core"
import { MemoryStoreLive } from "@wes/storage-memory"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { jsonLoggerLayer } from "../src/Logging.js"
import { httpLayer } from "../src/Server.js"
import { smokeWorkflow, TestGateway, workflowForm } from "./harness.js"

const core = useCasesLayer().pipe(Layer.provideMerge(Layer.mergeAll(
  MemoryStoreLive,
  TestGateway,
  RunnerProbe.Off,
  TierPolicy.layer({}),
  PlatformLive
)))

interface Side {
  readonly url: string
  readonly logs: Array<string>
}

const logs = { with: [] as Array<string>, without: [] as Array<string> }
let current: Array<string> = logs.with
const runtime = ManagedRuntime.make(core.pipe(Layer.provideMerge(jsonLoggerLayer((line) => current.push(line)))))
let scope: Scope.CloseableScope
const sides: Record<"with" | "without", Side> = { with: { url: "", logs: logs.with }, without: { url: "", logs: logs.without } }
let tokenA = ""
let tokenB = ""
let expired = ""
let running = ""
let cancelled = ""
let protoKeyed = ""

const serve = (fastLane: boolean) =>
  runtime.runPromise(Effect.gen(function*() {
    const context = yield* Layer.buildWithScope(httpLayer({
      port: 0,
      host: "127.0.0.1",
      rateLimit: "off",
      trustedProxies: 0,
      adminToken: Option.none(),
      sseKeepAlive: "15 seconds",
      shutdownGrace: "1 second",
      fastLane
    }), scope)
    const address = (yield* Effect.provide(HttpServer.HttpServer, context)).address
    if (address._tag !== "TcpAddress") throw new Error("expected TCP")
    return `http://127.0.0.1:${address.port}`
  }))

beforeAll(async () => {
  scope = await runtime.runPromise(Scope.make())
  sides.with = { url: await serve(true), logs: logs.with }
  sides.without = { url: await serve(false), logs: logs.without }
  const issued = await runtime.runPromise(Effect.gen(function*() {
    const accounts = yield* AccountService
    const a = yield* accounts.createUser({ tier: "pro" })
    const b = yield* accounts.createUser({ tier: "free" })
    const soon = new Date(Date.now() + 1000).toISOString()
    return {
      a: (yield* accounts.issueToken(a.id, { name: "a" })).token,
      b: (yield* accounts.issueToken(b.id, { name: "b" })).token,
      expiring: (yield* accounts.issueToken(a.id, { name: "soon", expires_at: soon })).token
    }
  }))
  tokenA = issued.a
  tokenB = issued.b
  expired = issued.expiring
  const auth = { authorization: `Bearer ${tokenA}` }
  const runner = await fetch(`${sides.without.url}/v1/runner`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ name: "r", endpoint: "http://127.0.0.1:1" })
  })
  expect(runner.status).toBe(201)
  const create = async (json: unknown = smokeWorkflow()) => {
    const res = await fetch(`${sides.without.url}/v1/workflow`, { method: "POST", headers: auth, body: workflowForm({ name: "w" }, json) })
    expect(res.status).toBe(201)
    return ((await res.json()) as { id: string }).id
  }
  running = await create()
  cancelled = await create()
  // A node whose id is `__proto__`: JSON.parse makes it an own key, and both paths must keep it.
  protoKeyed = await create(JSON.parse(JSON.stringify(smokeWorkflow()).replace(/^\{/, `{"__proto__":{"class_type":"Note","inputs":{"text":"kept"}},`)))
  expect((await fetch(`${sides.without.url}/v1/workflow/${cancelled}/cancel`, { method: "POST", headers: auth })).status).toBe(200)
  // Let the expiring token expire.
  await new Promise((r) => setTimeout(r, Math.max(0, 1100)))
})

afterAll(async () => {
  await runtime.runPromise(Scope.close(scope, Exit.void))
  await runtime.dispose()
})

interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
  readonly log: unknown
}

/** One request to one side: status, headers (but the date), body (the first SSE event for a live stream) and its log line. */
const ask = async (side: "with" | "without", path: string, headers: Record<string, string>): Promise<Answer> => {
  current = sides[side].logs
  const before = current.length
  const controller = new AbortController()
  const res = await fetch(sides[side].url + path, { headers, signal: controller.signal })
  const hs = Object.fromEntries([...res.headers].filter(([k]) => k !== "date" && k !== "keep-alive" && k !== "connection"))
  let body = ""
  if (hs["content-type"] === "text/event-stream" && !path.includes(cancelled)) {
    // A live stream: its first event, then hang up.
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    while (!body.includes("\n\n")) {
      const chunk = await reader.read()
      if (chunk.done) break
      body += decoder.decode(chunk.value)
    }
    controller.abort()
  } else body = await res.text()
  // The request log line is written when the answer is produced.
  for (let i = 0; i < 50 && current.length === before; i++) await new Promise((r) => setTimeout(r, 10))
  const line = current.slice(before).map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l["msg"] === "request")
  const log = line === undefined ? undefined : { level: line["level"], method: line["method"], path: line["path"], status: line["status"] }
  return { status: res.status, headers: hs, body, log }
}

describe("fast lane", () => {
  it("answers exactly as the app does, success and errors, for every route it serves", async () => {
    const bearer = (t: string) => ({ authorization: `Bearer ${t}` })
    const unknown = "wes_" + "A".repeat(36)
    const cases: Array<[string, Record<string, string>]> = []
    const paths = () => [
      "/v1/user",
      `/v1/workflow/${running}`,
      `/v1/workflow/${cancelled}`,
      `/v1/workflow/${protoKeyed}`,
      `/v1/workflow/${running.toUpperCase()}`,
      `/v1/workflow/${running}?verbose=1`,
      "/v1/workflow/00000000-0000-7000-8000-000000000000",
      "/v1/workflow/not-a-uuid",
      `/v1/workflow/${cancelled}/subscribe`,
      `/v1/workflow/${running}/subscribe`,
      "/v1/workflow/00000000-0000-7000-8000-000000000000/subscribe"
    ]
    for (const path of paths()) {
      cases.push([path, bearer(tokenA)], [path, bearer(tokenB)], [path, {}], [path, { authorization: "Bearer nope" }],
        [path, bearer(unknown)], [path, bearer(expired)], [path, { authorization: `bearer   ${tokenA}` }])
    }
    cases.push(
      [`/v1/workflow/${running}/subscribe`, { ...bearer(tokenA), "last-event-id": "0" }],
      [`/v1/workflow/${running}/subscribe`, { ...bearer(tokenA), "last-event-id": "99999" }],
      [`/v1/workflow/${running}/subscribe`, { ...bearer(tokenA), "last-event-id": "x1" }]
    )
    const statuses = new Set<number>()
    for (const [path, headers] of cases) {
      const without = await ask("without", path, headers)
      const withLane = await ask("with", path, headers)
      statuses.add(without.status)
      expect({ path, sent: headers, ...withLane }).toEqual({ path, sent: headers, ...without })
    }
    const detail = JSON.parse((await ask("with", `/v1/workflow/${protoKeyed}`, bearer(tokenA))).body) as { workflow_json: object }
    expect(Object.hasOwn(detail.workflow_json, "__proto__")).toBe(true)
    // The comparison covered successes and each kind of error the lane answers itself.
    expect([...statuses].sort()).toEqual([200, 400, 401, 404])
  }, 60_000)
})
