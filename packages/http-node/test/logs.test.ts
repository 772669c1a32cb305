import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { IncomingMessage, ServerResponse } from "node:http"
import { Socket } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { jsonLoggerLayer, requestLog } from "../src/Logging.js"
import { json, startServer, type TestServer } from "./harness.js"
import { until } from "./polling.js"

describe("request logs", () => {
  let server: TestServer
  beforeAll(async () => { server = await startServer() })
  afterAll(async () => { await server.close() })

  it("writes one JSON line per request with method, path, status and duration, and never a token", async () => {
    const u = await server.user()
    const runnerSecret = "runner-header-secret-value"
    await server.fetch("/v1/runner", json({ name: "r", endpoint: "http://127.0.0.1:8188", headers: { "X-Key": runnerSecret } }, u.auth))
    await server.fetch("/v1/workflow?page=1&per_page=5", { headers: u.auth })
    await server.fetch("/v1/user", { headers: { authorization: "Bearer wes_definitelynotvalid" } })
    await server.fetch("/v1/missing")
    const requests = server.logs.map((l) => JSON.parse(l)).filter((l) => l.msg === "request")
    expect(requests.map((l) => [l.method, l.path, l.status])).toEqual([
      ["POST", "/v1/runner", 201],
      ["GET", "/v1/workflow", 200],
      ["GET", "/v1/user", 401],
      ["GET", "/v1/missing", 404]
    ])
    for (const l of requests) {
      expect(typeof l.duration_ms).toBe("number")
      expect(Date.parse(l.time)).not.toBeNaN()
      expect(l.level).toBe("info")
    }
    const all = server.logs.join("\n")
    expect(all).not.toContain(u.token)
    expect(all).not.toContain("wes_definitelynotvalid")
    expect(all).not.toContain(runnerSecret)
  })
})

describe("request ids, user ids, refusals (issue 18, item 3)", () => {
  let server: TestServer
  beforeAll(async () => { server = await startServer({ http: { rateLimit: { limit: 2, windowMs: 60_000, cooldownMs: 60_000, maxEntries: 1000 } } }) })
  afterAll(async () => { await server.close() })

  const requests = () => server.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l["msg"] === "request")

  it("takes the client's X-Request-Id or makes one, returns it, and logs it with the user id", async () => {
    const u = await server.user()
    const mine = await server.fetch("/v1/user", { headers: { ...u.auth, "x-request-id": "trace-abc.123" } })
    expect(mine.headers.get("x-request-id")).toBe("trace-abc.123")
    // A missing or unusable id is replaced by a fresh one, also on an error answer.
    const made = await server.fetch("/v1/user", { headers: { "x-request-id": "bad id with spaces" } })
    expect(made.status).toBe(401)
    const id = made.headers.get("x-request-id")!
    expect(id).toMatch(/^[0-9a-f-]{36}$/)
    const lines = requests()
    expect(lines.find((l) => l["request_id"] === "trace-abc.123")).toMatchObject({ status: 200, user_id: u.id, path: "/v1/user" })
    expect(lines.find((l) => l["request_id"] === id)).toMatchObject({ status: 401 })
    expect(lines.find((l) => l["request_id"] === id)).not.toHaveProperty("user_id")
  })

  it("logs the 429s of the rate limit and the 431s of the HTTP parser", async () => {
    const before = requests().length
    const statuses: Array<number> = []
    for (let i = 0; i < 4; i++) statuses.push((await server.fetch("/v1/template")).status)
    expect(statuses.slice(-1)).toEqual([429])
    const tooLarge = await server.fetch(`/v1/user?q=${"x".repeat(20_000)}`)
    expect(tooLarge.status).toBe(431)
    await until("the 431 to be logged", () => requests().some((l) => l["status"] === 431))
    const after = requests().slice(before)
    expect(after.filter((l) => l["status"] === 429).length).toBeGreaterThanOrEqual(1)
    expect(after.filter((l) => l["status"] === 431)).toHaveLength(1)
    for (const l of after) expect(typeof l["request_id"]).toBe("string")
  })
})

describe("log lines written while a request runs", () => {
  it("carry the request's id, without a per-request annotation", async () => {
    const lines: Array<string> = []
    const req = new IncomingMessage(new Socket())
    req.headers["x-request-id"] = "req-42"
    const res = new ServerResponse(req)
    // The request as node's HTTP adapter hands it to the application.
    const program = Effect.gen(function*() {
      const begin = yield* requestLog
      const handled = yield* Deferred.make<void>()
      const app = Effect.logWarning("inside").pipe(Effect.andThen(Deferred.succeed(handled, undefined)), Effect.as(HttpServerResponse.empty()))
      const handler = yield* NodeHttpServer.makeHandler(app, { scope: yield* Effect.scope })
      begin(req, res)
      handler(req, res)
      yield* Deferred.await(handled)
      yield* Effect.logWarning("outside")
    }).pipe(Effect.scoped)
    await Effect.runPromise(program.pipe(Effect.provide(jsonLoggerLayer((line) => lines.push(line)))))
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(parsed.find((l) => l["msg"] === "inside")).toMatchObject({ level: "warn", request_id: "req-42" })
    expect(parsed.find((l) => l["msg"] === "outside")).not.toHaveProperty("request_id")
    expect(res.getHeader("x-request-id")).toBe("req-42")
  })
})
