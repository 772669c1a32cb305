import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { json, startServer, type TestServer } from "./harness.js"

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
