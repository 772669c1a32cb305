import * as http from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  ADMIN_TOKEN,
  type ErrorBody,
  json,
  type ManagedRunnerJson,
  NO_WORKFLOW,
  readJson,
  type RunnerJson,
  smokeWorkflow,
  startServer,
  type TemplateJson,
  type TestServer,
  type WorkflowDetailJson,
  type WorkflowListJson,
  workflowForm,
  type WorkflowSummaryJson
} from "./harness.js"

const SUMMARY_KEYS = ["completed_at", "created_at", "id", "name", "started_at", "status", "tags", "updated_at"]
// The contract's detail fields, then what WES adds: priority, attempts, the queue estimate (issue 17) and timings (issue 18).
const DETAIL_KEYS = [...SUMMARY_KEYS, "error_node", "exception_message", "exception_type", "managed_runner_id", "prompt_id", "queue_ms", "queue_number", "run_ms", "transfer_ms", "user_id", "user_runner_id", "workflow_json", "workflow_params", "priority", "attempts", "queue_position", "estimated_start_at", "webhook_url", "models"].sort()

describe("workflows", () => {
  let server: TestServer
  beforeAll(async () => { server = await startServer({ tiers: { free: { active_workflows: 100, workflows_per_day: 1000 } } }) })
  afterAll(async () => { await server.close() })

  const withRunner = async (tier: "free" | "pro" | "plus" = "free", tags: Array<string> = []) => {
    const u = await server.user(tier)
    const r = await readJson<RunnerJson>(await server.fetch("/v1/runner", json({ name: "r", endpoint: "http://127.0.0.1:8188", tags }, u.auth)))
    return { ...u, runner: r as { id: string } }
  }
  const create = (auth: Record<string, string>, fields: Parameters<typeof workflowForm>[0], wf?: unknown, headers: Record<string, string> = {}) =>
    server.fetch("/v1/workflow", { method: "POST", headers: { ...auth, ...headers }, body: workflowForm(fields, wf) })
  const expect400 = async (res: Response, field: string) => {
    const body = await readJson<ErrorBody>(res)
    expect(res.status).toBe(400)
    expect(body.status).toBe(400)
    expect(body.details!.map((d: { field: string }) => d.field)).toContain(field)
    return body as { message: string }
  }

  it("creates a workflow: 201 with the summary form, accepted, no start or end yet", async () => {
    const u = await withRunner()
    const res = await create(u.auth, { name: "portrait", tags: "" })
    expect(res.status).toBe(201)
    const body = await readJson<WorkflowSummaryJson>(res)
    expect(Object.keys(body).sort()).toEqual(SUMMARY_KEYS)
    expect(body).toMatchObject({ name: "portrait", status: "accepted", tags: [], started_at: null, completed_at: null })
    expect(body.id).toMatch(/^[0-9a-f-]{36}$/)
  })

  it("returns the detail form from get, with exactly one runner id and the definition as sent", async () => {
    const u = await withRunner()
    const wf = smokeWorkflow({ color: "$text(color, 7)" })
    const created = await readJson<WorkflowSummaryJson>(await create(u.auth, { name: "d", $color: "42" }, wf))
    const res = await server.fetch(`/v1/workflow/${created.id}`, { headers: u.auth })
    const body = await readJson<WorkflowDetailJson>(res)
    expect(Object.keys(body).sort()).toEqual(DETAIL_KEYS)
    expect(body).toMatchObject({
      user_id: u.id, user_runner_id: u.runner.id, managed_runner_id: null, workflow_json: wf,
      workflow_params: [["$text(color)", "42"]], prompt_id: null, queue_number: null,
      error_node: null, exception_type: null, exception_message: null
    })
  })

  it("rejects a missing name, a name over 200 characters, and accepts exactly 200", async () => {
    const u = await withRunner()
    await expect400(await create(u.auth, {}), "name")
    await expect400(await create(u.auth, { name: "x".repeat(201) }), "name")
    expect((await create(u.auth, { name: "x".repeat(200) })).status).toBe(201)
  })

  it("rejects a missing workflow_json, invalid JSON, UI format and other shapes", async () => {
    const u = await withRunner()
    await expect400(await create(u.auth, { name: "n" }, NO_WORKFLOW), "workflow_json")
    const form = new FormData()
    form.append("name", "n")
    form.append("workflow_json", new Blob(["{not json"]), "wf.json")
    const invalid = await expect400(await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: form }), "workflow_json")
    expect(invalid.message).toContain("is not valid JSON")
    const ui = await expect400(await create(u.auth, { name: "n" }, { nodes: [], links: [], version: 0.4 }), "workflow_json")
    expect(ui.message).toContain("export it in API format")
    await expect400(await create(u.auth, { name: "n" }, [1, 2]), "workflow_json")
    await expect400(await create(u.auth, { name: "n" }, { "1": { inputs: {} } }), "workflow_json.1.class_type")
  })

  it("rejects a request that is not multipart, and unknown form fields", async () => {
    const u = await withRunner()
    await expect400(await server.fetch("/v1/workflow", json({ name: "n" }, u.auth)), "Content-Type")
    const multipart = (contentType: string, body: string) => server.fetch("/v1/workflow", { method: "POST", headers: { ...u.auth, "content-type": contentType }, body })
    await expect400(await multipart("multipart/form-data", "--x--"), "Content-Type")
    await expect400(await multipart("multipart/form-data; boundary=x", ""), "body")
    const chunkedEmpty = await server.fetch("/v1/workflow", {
      method: "POST",
      headers: { ...u.auth, "content-type": "multipart/form-data; boundary=x" },
      body: new ReadableStream({ start: (c) => c.close() }),
      duplex: "half"
    } as RequestInit)
    expect(chunkedEmpty.status).toBe(400)
    await expect400(await create(u.auth, { name: "n", colour: "red" }), "colour")
  })

  it("validates tags and parameters, and says when no runner matches", async () => {
    const u = await withRunner("free", ["gpu"])
    await expect400(await create(u.auth, { name: "n", tags: "gpu,,x" }), "tags")
    const none = await create(u.auth, { name: "n", tags: "gpu,xl" })
    expect(none.status).toBe(400)
    expect((await readJson<ErrorBody>(none)).message).toContain("No runner available with matching tags")
    const wf = smokeWorkflow({ color: "$text(color)" })
    await expect400(await create(u.auth, { name: "n", $colour: "1" }, wf), "$colour")
    await expect400(await create(u.auth, { name: "n", $color: ["x", "c.png"] as const }, wf), "$color")
    await expect400(await create(u.auth, { name: "n" }, wf), "$color")
    expect((await create(u.auth, { name: "n", tags: "GPU", $color: "1" }, wf)).status).toBe(201)
  })

  it("answers 403 naming the limit when a workflow has more parameters than the tier allows", async () => {
    const u = await withRunner("free")
    const params = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, `$text(p${i}, v)`]))
    expect((await create(u.auth, { name: "ten" }, smokeWorkflow(params(10)))).status).toBe(201)
    const res = await create(u.auth, { name: "eleven" }, smokeWorkflow(params(11)))
    expect([res.status, await res.json()]).toEqual([403, { status: 403, message: "Workflow parameter limit exceeded: the free tier allows 10 parameters per workflow" }])
  })

  it("stores file parameters and records their storage path", async () => {
    const u = await withRunner()
    const wf = { ...smokeWorkflow(), "4": { class_type: "LoadImage", inputs: { image: "$file(photo)" } } }
    const created = await readJson<WorkflowSummaryJson>(await create(u.auth, { name: "f", $photo: [new Uint8Array([137, 80, 78, 71]), "cat.png"] as const }, wf))
    const detail = await readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${created.id}`, { headers: u.auth }))
    expect(detail.workflow_params).toEqual([["$file(photo)", `inputs/${created.id}/photo/cat.png`]])
  })

  it("creates from a template with template_id", async () => {
    const u = await withRunner()
    const tform = new FormData()
    tform.append("name", "t")
    tform.append("description", "d")
    tform.append("body", new Blob([JSON.stringify(smokeWorkflow({ width: 32 }))]), "t.json")
    const t = await readJson<TemplateJson>(await server.fetch("/v1/template", { method: "POST", headers: u.auth, body: tform }))
    const res = await create(u.auth, { name: "from t", template_id: t.id }, NO_WORKFLOW)
    expect(res.status).toBe(201)
    const detail = await readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${(await readJson<WorkflowSummaryJson>(res)).id}`, { headers: u.auth }))
    expect(detail.workflow_json).toEqual(smokeWorkflow({ width: 32 }))
  })

  it("returns the first workflow again for a repeated Idempotency-Key", async () => {
    const u = await withRunner()
    const a = await readJson<WorkflowSummaryJson>(await create(u.auth, { name: "a" }, smokeWorkflow(), { "idempotency-key": "k-1" }))
    const b = await create(u.auth, { name: "b" }, smokeWorkflow(), { "idempotency-key": "k-1" })
    expect((await readJson<WorkflowSummaryJson>(b)).id).toBe(a.id)
    expect((await readJson<WorkflowListJson>(await server.fetch("/v1/workflow", { headers: u.auth }))).total).toBe(1)
    // Even after it changed, the repeat gets the first answer again.
    await server.fetch(`/v1/workflow/${a.id}/cancel`, { method: "POST", headers: u.auth })
    const c = await create(u.auth, { name: "c" }, smokeWorkflow(), { "idempotency-key": "k-1" })
    expect([c.status, await c.json()]).toEqual([201, a])
  })

  it("lists newest first with defaults and bounds on page and per_page", async () => {
    const u = await withRunner()
    const ids: Array<string> = []
    for (let i = 0; i < 12; i++) ids.push((await readJson<WorkflowSummaryJson>(await create(u.auth, { name: `w${i}` }))).id)
    const list = async (q: string) => server.fetch(`/v1/workflow${q}`, { headers: u.auth })
    const first = await readJson<WorkflowListJson>(await list(""))
    expect(first.total).toBe(12)
    expect(first.workflows.map((w: { id: string }) => w.id)).toEqual(ids.slice().reverse().slice(0, 10))
    expect(Object.keys(first.workflows[0]).sort()).toEqual(SUMMARY_KEYS)
    const second = await readJson<WorkflowListJson>(await list("?page=2&per_page=10"))
    expect(second.workflows.map((w: { id: string }) => w.id)).toEqual(ids.slice().reverse().slice(10))
    expect((await readJson<WorkflowListJson>(await list("?per_page=100"))).workflows).toHaveLength(12)
    expect((await readJson<WorkflowListJson>(await list("?per_page=1"))).workflows).toHaveLength(1)
    await expect400(await list("?page=0"), "page")
    await expect400(await list("?per_page=0"), "per_page")
    await expect400(await list("?per_page=101"), "per_page")
    await expect400(await list("?page=abc"), "page")
    await expect400(await list("?status=done"), "status")
    expect((await readJson<WorkflowListJson>(await list("?status=accepted"))).total).toBe(12)
  })

  it("cancels once (200, summary form), then answers 409", async () => {
    const u = await withRunner()
    const w = await readJson<WorkflowSummaryJson>(await create(u.auth, { name: "c" }))
    const res = await server.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })
    const body = await readJson<WorkflowSummaryJson>(res)
    expect([res.status, body.status, Object.keys(body).sort()]).toEqual([200, "cancelled", SUMMARY_KEYS])
    expect(body.completed_at).not.toBeNull()
    const again = await server.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })
    expect([again.status, await again.json()]).toEqual([409, { status: 409, message: "Workflow is already cancelled" }])
  })

  it("reruns with new values: a new workflow with the original's name and tags", async () => {
    const u = await withRunner("free", ["gpu"])
    const wf = smokeWorkflow({ color: "$text(color)" })
    const original = await readJson<WorkflowSummaryJson>(await create(u.auth, { name: "orig", tags: "gpu", $color: "1" }, wf))
    const form = new FormData()
    form.append("$color", "2")
    const res = await server.fetch(`/v1/workflow/${original.id}/rerun`, { method: "POST", headers: u.auth, body: form })
    expect(res.status).toBe(201)
    const rerun = await readJson<WorkflowSummaryJson>(res)
    expect(Object.keys(rerun).sort()).toEqual(SUMMARY_KEYS)
    expect([rerun.id === original.id, rerun.name, rerun.tags, rerun.status]).toEqual([false, "orig", ["gpu"], "accepted"])
    const detail = await readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${rerun.id}`, { headers: u.auth }))
    expect(detail.workflow_params).toEqual([["$text(color)", "2"]])
    const bad = new FormData()
    bad.append("name", "renamed")
    await expect400(await server.fetch(`/v1/workflow/${original.id}/rerun`, { method: "POST", headers: u.auth, body: bad }), "name")
  })

  it("answers rerun errors: over 50 MB, and no runner left with the original's tags", async () => {
    const u = await withRunner("free", ["gpu"])
    const original = await readJson<WorkflowSummaryJson>(await create(u.auth, { name: "orig", tags: "gpu" }))
    // Declares 51 MB; the server answers from the header, before any body arrives.
    const big = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(`${server.url}/v1/workflow/${original.id}/rerun`, {
        method: "POST",
        headers: { ...u.auth, "content-type": "multipart/form-data; boundary=x", "content-length": String(51 * 1024 * 1024) }
      }, (res) => {
        let body = ""
        res.on("data", (d: Buffer) => (body += d.toString()))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }))
      })
      req.on("error", reject)
      req.write("--x\r\n")
    })
    expect(big.status).toBe(400)
    expect((JSON.parse(big.body) as ErrorBody).message).toBe("Request body exceeds 50 MB, the free tier's upload limit per request (max_upload_bytes)")
    await server.fetch(`/v1/runner/${u.runner.id}`, { method: "PATCH", headers: { ...u.auth, "content-type": "application/json" }, body: JSON.stringify({ status: "disabled" }) })
    const none = await server.fetch(`/v1/workflow/${original.id}/rerun`, { method: "POST", headers: u.auth, body: new FormData() })
    expect([none.status, (await readJson<ErrorBody>(none)).message]).toEqual([400, "No runner available with matching tags: no active runner has all of gpu"])
  })

  it("lists no outputs for a workflow that has not produced any", async () => {
    const u = await withRunner()
    const w = await readJson<WorkflowSummaryJson>(await create(u.auth, { name: "o" }))
    expect(await (await server.fetch(`/v1/workflow/${w.id}/outputs`, { headers: u.auth })).json()).toEqual({ outputs: [] })
    const missing = await server.fetch(`/v1/workflow/${w.id}/outputs/${w.id}`, { headers: u.auth })
    expect(missing.status).toBe(404)
  })

  it("treats another user's workflow as missing on every {id} route", async () => {
    const owner = await withRunner()
    const other = await withRunner()
    const w = await readJson<WorkflowSummaryJson>(await create(owner.auth, { name: "mine" }))
    const routes: Array<[string, string, NonNullable<RequestInit["body"]> | undefined]> = [
      ["GET", `/v1/workflow/${w.id}`, undefined],
      ["POST", `/v1/workflow/${w.id}/rerun`, new FormData()],
      ["POST", `/v1/workflow/${w.id}/cancel`, undefined],
      ["GET", `/v1/workflow/${w.id}/subscribe`, undefined],
      ["GET", `/v1/workflow/${w.id}/outputs`, undefined],
      ["GET", `/v1/workflow/${w.id}/outputs/${w.id}`, undefined]
    ]
    for (const [method, path, body] of routes) {
      const res = await server.fetch(path, { method, headers: other.auth, ...(body === undefined ? {} : { body }) })
      const text = await res.text()
      expect([method, path, res.status]).toEqual([method, path, 404])
      expect(text).not.toContain("mine")
    }
    expect((await server.fetch(`/v1/workflow/${w.id}`, { headers: owner.auth })).status).toBe(200)
  })

  it("uses managed runners for pro users", async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const m = await readJson<ManagedRunnerJson>(await server.fetch("/admin/v1/managed-runners", json({ name: "shared", runner_type: "pro", endpoint: "http://10.2.0.1:8188", tags: ["shared-gpu"] }, admin)))
    const pro = await server.user("pro")
    const res = await create(pro.auth, { name: "m", tags: "shared-gpu" })
    const w = await readJson<WorkflowSummaryJson>(res)
    const detail = await readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${w.id}`, { headers: pro.auth }))
    expect([detail.managed_runner_id, detail.user_runner_id]).toEqual([m.id, null])
    const history = await readJson<ReadonlyArray<WorkflowSummaryJson>>(await server.fetch(`/v1/managed-runner/${m.id}/history`, { headers: pro.auth }))
    expect(history.map((x: { id: string }) => x.id)).toEqual([w.id])
    expect(Object.keys(history[0]).sort()).toEqual(SUMMARY_KEYS)
  })
})
