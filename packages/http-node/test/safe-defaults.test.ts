/**
 * Issue 18, item 4: safe defaults. Runner header values are write-only (responses show the names,
 * values masked); the reachability probe answers one fixed message per category, never the
 * upstream's text; private and loopback runner addresses are refused unless `WES_DEV` or
 * `WES_RUNNER_ALLOW_PRIVATE=true`; the admin token is at least 32 characters.
 */
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadConfig } from "../src/Config.js"
import { ADMIN_TOKEN, type ErrorBody, json, RealGateway, readJson, type RunnerJson, startServer, type TestServer } from "./harness.js"

const configOf = (env: Record<string, string>) =>
  Effect.runSync(Effect.result(loadConfig.pipe(Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env)))))

describe("runner header values are write-only", () => {
  let server: TestServer
  beforeAll(async () => { server = await startServer() })
  afterAll(async () => { await server.close() })

  it("answers the header names with masked values on create, get, list and update; a masked value sent back keeps the secret", async () => {
    const u = await server.user("pro")
    const secret = "Bearer runner-proxy-secret"
    const created = await readJson<RunnerJson>(await server.fetch("/v1/runner", json({ name: "r", endpoint: "http://runner.example:8188", headers: { Authorization: secret } }, u.auth)))
    expect(created.headers).toEqual({ Authorization: "********" })
    const bodies = [
      await (await server.fetch(`/v1/runner/${created.id}`, { headers: u.auth })).text(),
      await (await server.fetch("/v1/runner", { headers: u.auth })).text()
    ]
    // A client that reads the runner and sends it back whole does not overwrite the secret with the mask.
    const put = await server.fetch(`/v1/runner/${created.id}`, { ...json({ name: "r2", headers: created.headers }, u.auth), method: "PUT" })
    bodies.push(await put.text())
    for (const body of bodies) {
      expect(body).not.toContain("runner-proxy-secret")
      expect(body).toContain("\"Authorization\":\"********\"")
    }
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const managed = await server.fetch("/admin/v1/managed-runners", json({ name: "m", runner_type: "pro", endpoint: "http://10.0.0.1:8188", headers: { "X-Key": "managed-secret" } }, admin))
    expect(await managed.text()).not.toContain("managed-secret")
  })
})

describe("the probe answers a fixed message per category", () => {
  let server: TestServer
  let upstream: http.Server
  let base: string
  beforeAll(async () => {
    server = await startServer({ gateway: RealGateway })
    // An internal service that is not ComfyUI, and one that never answers.
    upstream = http.createServer((req, res) => {
      if (req.url?.startsWith("/hang")) return
      res.writeHead(req.url?.startsWith("/json") ? 200 : 404, { "content-type": "text/plain" }).end("internal-admin-console v1.2 secret")
    })
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve))
    base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
  })
  afterAll(async () => {
    upstream.closeAllConnections()
    upstream.close()
    await server.close()
  })

  it("says unreachable, timeout or not ComfyUI, never what the endpoint answered", async () => {
    const u = await server.user("pro")
    const closed = await new Promise<number>((resolve) => {
      const s = http.createServer().listen(0, "127.0.0.1", () => {
        const port = (s.address() as AddressInfo).port
        s.close(() => resolve(port))
      })
    })
    const cases: ReadonlyArray<readonly [string, string]> = [
      [`${base}/`, "runner endpoint answered, but not as ComfyUI (GET /system_stats)"],
      [`${base}/json`, "runner endpoint answered, but not as ComfyUI (GET /system_stats)"],
      [`http://127.0.0.1:${closed}`, "runner endpoint is not reachable: the connection failed"],
      [`${base}/hang`, "runner endpoint is not reachable: no answer in time"]
    ]
    for (const [endpoint, message] of cases) {
      const res = await server.fetch("/v1/runner", json({ name: "r", endpoint }, u.auth))
      expect([endpoint, res.status, await readJson<ErrorBody>(res)]).toEqual([endpoint, 400, { status: 400, message }])
    }
    // The operator still learns the reason, from the log.
    expect(server.logs.some((l) => l.includes("runner probe failed") && l.includes("secret"))).toBe(true)
  }, 30_000)
})

describe("configuration defaults", () => {
  it("refuses private runner addresses unless WES_DEV or WES_RUNNER_ALLOW_PRIVATE=true", () => {
    const deny = (env: Record<string, string>) => Result.map(configOf(env), (c) => c.runnerDenyPrivate)
    expect(deny({})).toEqual(Result.succeed(true))
    expect(deny({ WES_DEV: "true" })).toEqual(Result.succeed(false))
    expect(deny({ WES_RUNNER_ALLOW_PRIVATE: "true" })).toEqual(Result.succeed(false))
    expect(deny({ WES_DEV: "true", WES_RUNNER_ALLOW_PRIVATE: "false" })).toEqual(Result.succeed(true))
  })

  it("refuses an admin token shorter than 32 characters, naming the variable", () => {
    const short = configOf({ WES_ADMIN_TOKEN: "x" })
    expect(Result.isFailure(short) && String(short.failure)).toContain("WES_ADMIN_TOKEN must be at least 32 characters")
    expect(Result.isSuccess(configOf({ WES_ADMIN_TOKEN: "x".repeat(32) }))).toBe(true)
  })
})
