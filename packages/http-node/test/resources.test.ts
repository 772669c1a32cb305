import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  ADMIN_TOKEN,
  type ErrorBody,
  json,
  type ManagedRunnerJson,
  type ManagedRunnerViewListJson,
  readJson,
  type RunnerJson,
  type RunnerListJson,
  smokeWorkflow,
  startServer,
  type TemplateJson,
  type TemplateListJson,
  type TestServer,
  workflowForm,
  type WorkflowSummaryJson
} from "./harness.js"

const TEMPLATE_KEYS = ["body", "created_at", "description", "id", "models", "name", "updated_at", "user_id"]
const RUNNER_KEYS = ["agent", "capabilities", "comfyui", "connection", "created_at", "endpoint", "headers", "id", "name", "status", "tags", "updated_at", "user_id", "warning"]

let server: TestServer
beforeAll(async () => { server = await startServer() })
afterAll(async () => { await server.close() })

const expect400 = async (res: Response, field: string) => {
  const body = await readJson<ErrorBody>(res)
  expect([res.status, body.status]).toEqual([400, 400])
  expect(body.details!.map((d: { field: string }) => d.field)).toContain(field)
}

describe("templates", () => {
  /** `body` null: no body part. */
  const form = (fields: Record<string, string | undefined>, body: unknown) => {
    const f = new FormData()
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) f.append(k, v)
    if (body !== null) f.append("body", new Blob([typeof body === "string" ? body : JSON.stringify(body)]), "body.json")
    return f
  }
  const create = (auth: Record<string, string>, fields: Record<string, string | undefined>, body: unknown) =>
    server.fetch("/v1/template", { method: "POST", headers: auth, body: form(fields, body) })

  it("creates (201, with body), gets, updates partially and deletes (204)", async () => {
    const u = await server.user()
    const res = await create(u.auth, { name: "portrait", description: "a portrait" }, smokeWorkflow())
    const t = await readJson<TemplateJson>(res)
    expect([res.status, Object.keys(t).sort()]).toEqual([201, TEMPLATE_KEYS])
    expect(t).toMatchObject({ name: "portrait", description: "a portrait", body: smokeWorkflow(), user_id: u.id })
    expect(await (await server.fetch(`/v1/template/${t.id}`, { headers: u.auth })).json()).toEqual(t)
    const upd = new FormData()
    upd.append("description", "new words")
    const updated = await readJson<TemplateJson>(await server.fetch(`/v1/template/${t.id}`, { method: "PUT", headers: u.auth, body: upd }))
    expect([updated.name, updated.description, updated.body]).toEqual(["portrait", "new words", smokeWorkflow()])
    expect((await server.fetch(`/v1/template/${t.id}`, { method: "DELETE", headers: u.auth })).status).toBe(204)
    expect((await server.fetch(`/v1/template/${t.id}`, { headers: u.auth })).status).toBe(404)
  })

  it("bounds name (1-100) and description (1-500): exactly at the bound, and one past", async () => {
    const u = await server.user("pro")
    expect((await create(u.auth, { name: "n".repeat(100), description: "d".repeat(500) }, smokeWorkflow())).status).toBe(201)
    await expect400(await create(u.auth, { name: "n".repeat(101), description: "d" }, smokeWorkflow()), "name")
    await expect400(await create(u.auth, { name: "n", description: "d".repeat(501) }, smokeWorkflow()), "description")
    await expect400(await create(u.auth, { description: "d" }, smokeWorkflow()), "name")
    await expect400(await create(u.auth, { name: "n" }, smokeWorkflow()), "description")
    await expect400(await create(u.auth, { name: "n", description: "d" }, null), "body")
    const t = await readJson<TemplateJson>(await create(u.auth, { name: "n", description: "d" }, smokeWorkflow()))
    const upd = new FormData()
    upd.append("name", "x".repeat(101))
    await expect400(await server.fetch(`/v1/template/${t.id}`, { method: "PUT", headers: u.auth, body: upd }), "name")
  })

  it("rejects a body that is not JSON, saying so", async () => {
    const u = await server.user()
    const res = await create(u.auth, { name: "n", description: "d" }, "{oops")
    const body = await readJson<ErrorBody>(res)
    expect([res.status, body.message]).toEqual([400, expect.stringContaining("body: is not valid JSON")])
  })

  it("allows 10 templates on free, the 11th is 403 naming the limit", async () => {
    const u = await server.user("free")
    for (let i = 0; i < 10; i++) expect((await create(u.auth, { name: `t${i}`, description: "d" }, smokeWorkflow())).status).toBe(201)
    const res = await create(u.auth, { name: "t10", description: "d" }, smokeWorkflow())
    expect([res.status, await res.json()]).toEqual([403, { status: 403, message: "Template limit exceeded: the free tier allows 10 templates" }])
    const list = await readJson<TemplateListJson>(await server.fetch("/v1/template?per_page=3&page=2", { headers: u.auth }))
    expect(list.total).toBe(10)
    expect(list.templates.map((t: { name: string }) => t.name)).toEqual(["t6", "t5", "t4"])
    expect(Object.keys(list.templates[0]).sort()).toEqual(TEMPLATE_KEYS.filter((k) => k !== "body" && k !== "models"))
  })

  it("treats another user's template as missing", async () => {
    const owner = await server.user()
    const other = await server.user()
    const t = await readJson<TemplateJson>(await create(owner.auth, { name: "mine", description: "d" }, smokeWorkflow()))
    for (const [method, body] of [["GET", undefined], ["PUT", form({ name: "x" }, null)], ["DELETE", undefined]] as const) {
      const res = await server.fetch(`/v1/template/${t.id}`, { method, headers: other.auth, ...(body === undefined ? {} : { body }) })
      expect([method, res.status]).toEqual([method, 404])
    }
    const f = workflowForm({ name: "x", template_id: t.id }, undefined)
    f.delete("workflow_json")
    await server.fetch("/v1/runner", json({ name: "r", endpoint: "http://127.0.0.1:8188" }, other.auth))
    expect((await server.fetch("/v1/workflow", { method: "POST", headers: other.auth, body: f })).status).toBe(404)
  })
})

describe("runners", () => {
  const create = (auth: Record<string, string>, body: unknown) => server.fetch("/v1/runner", json(body, auth))
  const valid = { name: "box", endpoint: "http://127.0.0.1:8188" }

  it("registers a runner: 201, active, header names (values masked) and tags returned", async () => {
    const u = await server.user()
    const res = await create(u.auth, { ...valid, headers: { "X-Api-Key": "s3cret" }, tags: ["GPU", "sdxl"] })
    const r = await readJson<RunnerJson>(res)
    expect([res.status, Object.keys(r).sort()]).toEqual([201, RUNNER_KEYS])
    expect(r).toMatchObject({ status: "active", user_id: u.id, headers: { "X-Api-Key": "********" }, tags: ["gpu", "sdxl"] })
    // What the probe found: the test runner's ComfyUI 0.3.64, without the jobs API; nothing to warn about.
    expect([r.comfyui, r.warning]).toEqual([{ version: "0.3.64", devices: [], jobs_api: false }, null])
    // The test runner has no /object_info to read: its capabilities are unknown.
    expect(r.capabilities).toBeNull()
    const noHeaders = await readJson<RunnerJson>(await create(u.auth, valid))
    expect([noHeaders.headers, noHeaders.tags]).toEqual([{}, []])
  })

  it("bounds tags (10 ok, 11 rejected) and names (1-100)", async () => {
    const u = await server.user("plus")
    const tags = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`)
    expect((await create(u.auth, { ...valid, tags: tags(10) })).status).toBe(201)
    await expect400(await create(u.auth, { ...valid, tags: tags(11) }), "tags")
    expect((await create(u.auth, { ...valid, name: "n".repeat(100) })).status).toBe(201)
    await expect400(await create(u.auth, { ...valid, name: "n".repeat(101) }), "name")
    await expect400(await create(u.auth, { ...valid, name: "" }), "name")
  })

  it("rejects invalid endpoints, headers that are not string to string, and unreachable runners", async () => {
    const u = await server.user("plus")
    for (const endpoint of ["ftp://x", "nope", "http://"]) await expect400(await create(u.auth, { ...valid, endpoint }), "endpoint")
    await expect400(await create(u.auth, { ...valid, headers: { a: 1 } }), "headers.a")
    await expect400(await create(u.auth, { ...valid, headers: "x" }), "headers")
    await expect400(await create(u.auth, { ...valid, headers: ["a"] }), "headers")
    await expect400(await create(u.auth, { ...valid, headers: { a: { b: "c" } } }), "headers.a")
    await expect400(await create(u.auth, { ...valid, tags: "gpu" }), "tags")
    const res = await create(u.auth, { ...valid, endpoint: "http://unreachable.invalid" })
    expect([res.status, (await readJson<ErrorBody>(res)).message]).toEqual([400, "runner endpoint is not reachable: the connection failed"])
    const notJson = await server.fetch("/v1/runner", { method: "POST", headers: { ...u.auth, "content-type": "application/json" }, body: "{" })
    expect([notJson.status, (await readJson<ErrorBody>(notJson)).message]).toEqual([400, "body: is not valid JSON"])
  })

  it("allows 2 runners on free, the 3rd is 403 naming the limit", async () => {
    const u = await server.user("free")
    expect((await create(u.auth, valid)).status).toBe(201)
    expect((await create(u.auth, valid)).status).toBe(201)
    const res = await create(u.auth, valid)
    expect([res.status, await res.json()]).toEqual([403, { status: 403, message: "Runner limit exceeded: the free tier allows 2 runners" }])
  })

  it("updates with PATCH and PUT (tags replaced, omitted fields kept), lists by status, deletes (204)", async () => {
    const u = await server.user("pro")
    const r = await readJson<RunnerJson>(await create(u.auth, { ...valid, tags: ["a", "b"], headers: { "X-K": "1" } }))
    const patch = (method: string, body: unknown) =>
      server.fetch(`/v1/runner/${r.id}`, { method, headers: { ...u.auth, "content-type": "application/json" }, body: JSON.stringify(body) })
    const p = await readJson<RunnerJson>(await patch("PATCH", { tags: ["c"] }))
    expect([p.name, p.tags, p.headers, p.endpoint]).toEqual(["box", ["c"], { "X-K": "********" }, valid.endpoint])
    const q = await readJson<RunnerJson>(await patch("PUT", { name: "renamed", status: "disabled" }))
    expect([q.name, q.status, q.tags]).toEqual(["renamed", "disabled", ["c"]])
    await expect400(await patch("PATCH", { status: "paused" }), "status")
    await expect400(await patch("PATCH", { tags: Array.from({ length: 11 }, (_, i) => `t${i}`) }), "tags")
    await expect400(await patch("PATCH", { name: "n".repeat(101) }), "name")
    await expect400(await patch("PATCH", { headers: { a: 1 } }), "headers.a")
    await expect400(await patch("PATCH", { endpoint: "nope" }), "endpoint")
    const disabled = await readJson<RunnerListJson>(await server.fetch("/v1/runner?status=disabled", { headers: u.auth }))
    expect([disabled.total, disabled.runners[0].id]).toEqual([1, r.id])
    expect((await readJson<RunnerListJson>(await server.fetch("/v1/runner?status=active", { headers: u.auth }))).total).toBe(0)
    await expect400(await server.fetch("/v1/runner?status=paused", { headers: u.auth }), "status")
    expect((await server.fetch(`/v1/runner/${r.id}`, { method: "DELETE", headers: u.auth })).status).toBe(204)
  })

  it("keeps workflows off a disabled runner", async () => {
    const u = await server.user("free")
    const r = await readJson<RunnerJson>(await create(u.auth, valid))
    await server.fetch(`/v1/runner/${r.id}`, { method: "PATCH", headers: { ...u.auth, "content-type": "application/json" }, body: JSON.stringify({ status: "disabled" }) })
    const res = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "w" }) })
    expect([res.status, (await readJson<ErrorBody>(res)).message]).toEqual([400, expect.stringContaining("No runner available")])
  })

  it("gives a runner's history as a bare array of at most 10 summaries, newest first", async () => {
    const u = await server.user("pro")
    const r = await readJson<RunnerJson>(await create(u.auth, valid))
    const ids: Array<string> = []
    for (let i = 0; i < 12; i++) {
      ids.push((await readJson<WorkflowSummaryJson>(await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: `w${i}` }) }))).id)
    }
    const history = await readJson<ReadonlyArray<WorkflowSummaryJson>>(await server.fetch(`/v1/runner/${r.id}/history`, { headers: u.auth }))
    expect(history.map((w: { id: string }) => w.id)).toEqual(ids.slice().reverse().slice(0, 10))
    const busy = await server.fetch(`/v1/runner/${r.id}`, { method: "DELETE", headers: u.auth })
    expect(busy.status).toBe(409)
  })

  it("treats another user's runner as missing on every {id} route", async () => {
    const owner = await server.user()
    const other = await server.user()
    const r = await readJson<RunnerJson>(await create(owner.auth, { ...valid, headers: { "X-Secret": "owner-only" } }))
    for (const [method, path] of [["GET", ""], ["PATCH", ""], ["PUT", ""], ["DELETE", ""], ["GET", "/history"]]) {
      const res = await server.fetch(`/v1/runner/${r.id}${path}`, { method: method!, headers: { ...other.auth, "content-type": "application/json" }, ...(method === "PATCH" || method === "PUT" ? { body: "{}" } : {}) })
      const text = await res.text()
      expect([method, path, res.status]).toEqual([method, path, 404])
      expect(text).not.toContain("owner-only")
    }
    const list = await (await server.fetch("/v1/runner", { headers: other.auth })).json()
    expect(list).toEqual({ runners: [], total: 0 })
  })
})

describe("managed runners", () => {
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }

  it("are 403 for the free tier, and list only active runners of the caller's tier without endpoint or headers", async () => {
    const pro = await readJson<ManagedRunnerJson>(await server.fetch("/admin/v1/managed-runners", json({ name: "pro", runner_type: "pro", endpoint: "http://10.0.0.1:8188", headers: { Authorization: "Bearer x" } }, admin)))
    const plus = await readJson<ManagedRunnerJson>(await server.fetch("/admin/v1/managed-runners", json({ name: "plus", runner_type: "plus", endpoint: "http://10.0.0.2:8188" }, admin)))
    await server.fetch("/admin/v1/managed-runners", json({ name: "off", runner_type: "pro", endpoint: "http://10.0.0.3:8188", status: "disabled" }, admin))
    const free = await server.user("free")
    const denied = await server.fetch("/v1/managed-runner", { headers: free.auth })
    expect([denied.status, await denied.json()]).toEqual([403, { status: 403, message: "Managed runners require the pro or plus tier" }])
    expect((await server.fetch(`/v1/managed-runner/${pro.id}/history`, { headers: free.auth })).status).toBe(403)
    const proUser = await server.user("pro")
    const list = await readJson<ManagedRunnerViewListJson>(await server.fetch("/v1/managed-runner", { headers: proUser.auth }))
    expect(list.runners.map((r: { id: string }) => r.id)).toEqual([pro.id])
    expect(list.total).toBe(1)
    expect(Object.keys(list.runners[0]).sort()).toEqual(["created_at", "id", "name", "runner_type", "status", "tags", "updated_at"])
    expect((await server.fetch(`/v1/managed-runner/${plus.id}/history`, { headers: proUser.auth })).status).toBe(404)
    expect(await (await server.fetch(`/v1/managed-runner/${pro.id}/history`, { headers: proUser.auth })).json()).toEqual([])
    const plusUser = await server.user("plus")
    expect((await readJson<ManagedRunnerViewListJson>(await server.fetch("/v1/managed-runner", { headers: plusUser.auth }))).total).toBe(2)
    await expect400(await server.fetch("/v1/managed-runner?per_page=101", { headers: plusUser.auth }), "per_page")
  })
})
