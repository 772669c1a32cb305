import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { movableClock } from "./clock.js"
import {
  ADMIN_TOKEN,
  type CurrentUserJson,
  type ErrorBody,
  type IssuedTokenJson,
  json,
  type ManagedRunnerJson,
  type ManagedRunnerListJson,
  readJson,
  startServer,
  type TestServer,
  type UserJson
} from "./harness.js"

describe("authentication", () => {
  let server: TestServer
  const clock = movableClock()
  beforeAll(async () => { server = await startServer({ clock: clock.layer }) })
  afterAll(async () => { await server.close() })

  const get = (headers: Record<string, string>) => server.fetch("/v1/user", { headers })

  it("answers 401 'Missing authorization header' without the header", async () => {
    const res = await get({})
    expect(res.status).toBe(401)
    expect(await res.json()).toEqual({ status: 401, message: "Missing authorization header" })
  })

  it("answers 401 'Invalid token' for garbage, other schemes and well-formed unknown tokens", async () => {
    const u = await server.user()
    // One character of the real token changed (to another one: a token whose fifth is "A" already stays itself).
    const unknown = u.token.slice(0, 4) + (u.token[4] === "A" ? "B" : "A") + u.token.slice(5)
    for (const header of ["Bearer nope", `Basic ${u.token}`, "wes_x", "Bearer wes_" + "0".repeat(42), `Bearer ${unknown}`]) {
      const res = await get({ authorization: header })
      expect([header, res.status, await res.json()]).toEqual([header, 401, { status: 401, message: "Invalid token" }])
    }
  })

  it("answers 401 'Token has expired' for an expired token", async () => {
    const user = await server.fetch("/admin/v1/users", json({ tier: "free" }, { authorization: `Bearer ${ADMIN_TOKEN}` })).then((r) => readJson<UserJson>(r))
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString()
    const issued = await server.fetch(`/admin/v1/users/${user.id}/tokens`, json({ name: "old", expires_at: inAnHour }, { authorization: `Bearer ${ADMIN_TOKEN}` })).then((r) => readJson<IssuedTokenJson>(r))
    expect((await get({ authorization: `Bearer ${issued.token}` })).status).toBe(200)
    clock.advance("61 minutes")
    const res = await get({ authorization: `Bearer ${issued.token}` })
    expect([res.status, await res.json()]).toEqual([401, { status: 401, message: "Token has expired" }])
  })

  it("accepts a valid token and returns the user's tier, limits and usage", async () => {
    const u = await server.user("pro")
    const res = await get(u.auth)
    expect(res.status).toBe(200)
    const body = await readJson<CurrentUserJson>(res)
    expect(body).toMatchObject({
      id: u.id,
      tier: "pro",
      limits: { active_workflows: 50, workflows_per_day: 5000, templates: 200, runners: 20, workflow_params: 50 },
      usage: { active_workflows: 0, workflows_today: 0, templates: 0, runners: 0 }
    })
    expect(Date.parse(body.created_at)).not.toBeNaN()
  })

  it("requires authentication on every /v1 operation", async () => {
    const id = "0b3c1e9e-7f6a-4c1e-9a55-5d2b0c8f1a11"
    const routes: Array<[string, string]> = [
      ["GET", "/v1/user"], ["POST", "/v1/workflow"], ["GET", "/v1/workflow"], ["GET", `/v1/workflow/${id}`],
      ["POST", `/v1/workflow/${id}/rerun`], ["POST", `/v1/workflow/${id}/cancel`], ["GET", `/v1/workflow/${id}/subscribe`],
      ["GET", `/v1/workflow/${id}/outputs`], ["GET", `/v1/workflow/${id}/outputs/${id}`], ["POST", "/v1/template"],
      ["GET", "/v1/template"], ["GET", `/v1/template/${id}`], ["PUT", `/v1/template/${id}`], ["DELETE", `/v1/template/${id}`],
      ["POST", "/v1/runner"], ["GET", "/v1/runner"], ["GET", `/v1/runner/${id}`], ["PATCH", `/v1/runner/${id}`],
      ["PUT", `/v1/runner/${id}`], ["DELETE", `/v1/runner/${id}`], ["GET", `/v1/runner/${id}/history`],
      ["GET", "/v1/managed-runner"], ["GET", `/v1/managed-runner/${id}/history`]
    ]
    for (const [method, path] of routes) {
      const res = await server.fetch(path, { method })
      expect([method, path, res.status]).toEqual([method, path, 401])
    }
  })

  it("serves health checks without a token", async () => {
    expect(await (await server.fetch("/healthz")).json()).toEqual({ status: "ok" })
    expect(await (await server.fetch("/readyz")).json()).toEqual({ status: "ok" })
  })

  it("answers a known path with the wrong method with 405 and Allow", async () => {
    const u = await server.user()
    const res = await server.fetch("/v1/user", { method: "POST", headers: u.auth })
    expect([res.status, res.headers.get("allow"), await res.json()]).toEqual([405, "GET", { status: 405, message: "Method not allowed: use GET" }])
    const list = await server.fetch("/v1/workflow", { method: "DELETE", headers: u.auth })
    expect([list.status, list.headers.get("allow")]).toEqual([405, "POST, GET"])
  })

  it("answers unknown routes with a JSON 404", async () => {
    const res = await server.fetch("/v1/nothing-here")
    expect([res.status, await res.json()]).toEqual([404, { status: 404, message: "Not found" }])
  })
})

describe("admin API", () => {
  let server: TestServer
  let closed: TestServer
  beforeAll(async () => {
    server = await startServer()
    closed = await startServer({ http: { adminToken: { _tag: "None" } as never } })
  })
  afterAll(async () => {
    await server.close()
    await closed.close()
  })
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

  it("is the only way tokens come to exist: the value is shown once, lists never show it", async () => {
    const user = await readJson<UserJson>(await server.fetch("/admin/v1/users", json({ tier: "plus", email: "ops@example.com" }, admin)))
    expect(user).toMatchObject({ tier: "plus", email: "ops@example.com" })
    const issued = await server.fetch(`/admin/v1/users/${user.id}/tokens`, json({ name: "ci" }, admin))
    expect(issued.status).toBe(201)
    const token = await readJson<IssuedTokenJson>(issued)
    expect(token.token).toMatch(/^wes_[0-9A-Za-z]{42}$/)
    expect(Object.keys(token).sort()).toEqual(["created_at", "expires_at", "id", "name", "token"])
    const me = await server.fetch("/v1/user", { headers: { authorization: `Bearer ${token.token}` } })
    expect((await readJson<CurrentUserJson>(me)).tier).toBe("plus")
    const listed = await (await server.fetch(`/admin/v1/users/${user.id}/tokens`, { headers: admin })).text()
    expect(listed).not.toContain(token.token)
    expect(JSON.parse(listed)[0]).toMatchObject({ id: token.id, name: "ci" })
    const revoke = await server.fetch(`/admin/v1/tokens/${token.id}`, { method: "DELETE", headers: admin })
    expect(revoke.status).toBe(204)
    const after = await server.fetch("/v1/user", { headers: { authorization: `Bearer ${token.token}` } })
    expect(await after.json()).toEqual({ status: 401, message: "Invalid token" })
  })

  it("changes a user's tier and manages managed runners", async () => {
    const user = await readJson<UserJson>(await server.fetch("/admin/v1/users", json({ tier: "free" }, admin)))
    const patched = await server.fetch(`/admin/v1/users/${user.id}`, { method: "PATCH", headers: { ...admin, "content-type": "application/json" }, body: JSON.stringify({ tier: "pro" }) })
    expect((await readJson<UserJson>(patched)).tier).toBe("pro")
    const bad = await server.fetch(`/admin/v1/users/${user.id}`, { method: "PATCH", headers: { ...admin, "content-type": "application/json" }, body: JSON.stringify({ tier: "gold" }) })
    expect([bad.status, (await readJson<ErrorBody>(bad)).details![0].field]).toEqual([400, "tier"])
    const created = await server.fetch("/admin/v1/managed-runners", json({ name: "gpu-1", runner_type: "pro", endpoint: "http://10.1.0.1:8188", headers: { "X-Key": "k" }, tags: ["gpu"] }, admin))
    expect(created.status).toBe(201)
    const runner = await readJson<ManagedRunnerJson>(created)
    expect(runner).toMatchObject({ runner_type: "pro", endpoint: "http://10.1.0.1:8188", headers: { "X-Key": "********" }, status: "active" })
    const list = await readJson<ManagedRunnerListJson>(await server.fetch("/admin/v1/managed-runners", { headers: admin }))
    expect(list.runners.map((r: { id: string }) => r.id)).toContain(runner.id)
    const off = await server.fetch(`/admin/v1/managed-runners/${runner.id}`, { method: "PATCH", headers: { ...admin, "content-type": "application/json" }, body: JSON.stringify({ status: "disabled" }) })
    expect((await readJson<ManagedRunnerJson>(off)).status).toBe("disabled")
    expect((await server.fetch(`/admin/v1/managed-runners/${runner.id}`, { method: "DELETE", headers: admin })).status).toBe(204)
  })

  it("refuses to issue a token that has already expired", async () => {
    const user = await readJson<UserJson>(await server.fetch("/admin/v1/users", json({ tier: "free" }, admin)))
    const res = await server.fetch(`/admin/v1/users/${user.id}/tokens`, json({ name: "old", expires_at: "2020-01-01T00:00:00Z" }, admin))
    expect([res.status, (await readJson<ErrorBody>(res)).details]).toEqual([400, [{ field: "expires_at", message: "must be in the future" }]])
  })

  it("rejects a wrong admin token and user tokens", async () => {
    const u = await server.user()
    for (const headers of [{}, { authorization: "Bearer wrong" }, u.auth]) {
      const res = await server.fetch("/admin/v1/managed-runners", { headers })
      expect(res.status).toBe(401)
    }
  })

  it("answers 404 everywhere when WES_ADMIN_TOKEN is not set", async () => {
    for (const headers of [{}, admin]) {
      const res = await closed.fetch("/admin/v1/managed-runners", { headers })
      expect([res.status, await res.json()]).toEqual([404, { status: 404, message: "Not found" }])
    }
  })
})
