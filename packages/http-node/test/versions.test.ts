/**
 * ComfyUI versions over HTTP, with the dispatcher and the real runner client against fake
 * ComfyUIs of different versions: the minimum at registration, the warning for the cancel race,
 * the version in the detail and the metrics, a version change seen at the next connection, cancel
 * through the jobs API where the runner has it, and deprecated node classes a runner replaces.
 */
import { FakeComfyUI, type FakeComfyUIOptions, slowWorkflow } from "@wes/runner-client/testing"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import {
  ADMIN_TOKEN,
  type ErrorBody,
  fastDispatch,
  json,
  type ManagedRunnerJson,
  readJson,
  type RunnerJson,
  smokeWorkflow,
  startServer,
  type TestServer,
  type WorkflowDetailJson,
  workflowForm,
  type WorkflowSummaryJson
} from "./harness.js"
import { poll } from "./polling.js"
import { seriesValue } from "./prometheus.js"

let server: TestServer
const fakes: Array<FakeComfyUI> = []

beforeAll(async () => {
  server = await startServer({ dispatcher: fastDispatch, tiers: { pro: { runners: 10 } }, capabilities: { minReadSpacing: "0 millis" } })
})
afterAll(async () => { await server.close() })
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})

type User = Awaited<ReturnType<TestServer["user"]>>

const fake = async (options: FakeComfyUIOptions) => {
  const f = await FakeComfyUI.start(options)
  fakes.push(f)
  return f
}
const register = (u: User, f: FakeComfyUI, name = "gpu") => server.fetch("/v1/runner", json({ name, endpoint: f.url }, u.auth))
const runner = async (u: User, id: string) => readJson<RunnerJson>(await server.fetch(`/v1/runner/${id}`, { headers: u.auth }))
const created = async (u: User, workflow: unknown) => {
  const res = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "w" }, workflow) })
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${await res.text()}`)
  return readJson<WorkflowSummaryJson>(res)
}
const detail = async (u: User, id: string) => readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${id}`, { headers: u.auth }))

const ended = (u: User, id: string) =>
  poll(`workflow ${id} to end`, async () => {
    const w = await detail(u, id)
    return ["completed", "failed", "invalid", "cancelled"].includes(w.status) ? w : undefined
  })

describe("ComfyUI versions", () => {
  it("refuses a runner below 0.3.45 with 400 naming the minimum, user and managed alike", async () => {
    const u = await server.user("pro")
    const old = await fake({ version: "0.3.44", promptIdMode: "ignored" })
    const res = await register(u, old)
    expect([res.status, await readJson<ErrorBody>(res)]).toEqual([400, { status: 400, message: "runner runs ComfyUI 0.3.44; WES needs ComfyUI 0.3.45 or later" }])
    const managed = await server.fetch("/admin/v1/managed-runners", json({ name: "old", runner_type: "pro", endpoint: old.url }, { authorization: `Bearer ${ADMIN_TOKEN}` }))
    expect(managed.status).toBe(400)
    expect(old.submissions).toHaveLength(0)
  })

  it("registers 0.3.45-0.3.56 with a warning about the cancel race, and shows the version and devices in the detail and the metrics", async () => {
    const u = await server.user("pro")
    const f = await fake({ version: "0.3.50", promptIdMode: "legacy", globalInterrupt: true })
    const res = await register(u, f)
    const r = await readJson<RunnerJson>(res)
    expect(res.status).toBe(201)
    expect(r.comfyui).toEqual({ version: "0.3.50", devices: [{ name: "cpu", type: "cpu", index: null, vram_total: expect.any(Number) }], jobs_api: false })
    expect(r.warning).toContain("a cancel that comes as its prompt ends may stop the next prompt on this runner")
    expect(await runner(u, r.id)).toMatchObject({ comfyui: r.comfyui, warning: r.warning })
    const operator = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const m = await readJson<ManagedRunnerJson>(await server.fetch("/admin/v1/managed-runners", json({ name: "pool", runner_type: "pro", endpoint: f.url }, operator)))
    expect([m.comfyui?.version, m.warning]).toEqual(["0.3.50", r.warning])
    await server.fetch(`/admin/v1/managed-runners/${m.id}`, { method: "DELETE", headers: operator })
    const w = await created(u, smokeWorkflow({ color: 50 }))
    expect((await ended(u, w.id)).status).toBe("completed")
    const metrics = await (await server.fetch("/metrics")).text()
    expect(seriesValue(metrics, "wes_dispatch_attempts_total", { result: "submitted", comfyui_version: "0.3.50" })).toBeGreaterThanOrEqual(1)
  })

  it("sees a runner reinstalled below 0.3.45 when its driver reconnects, and routes no more work to it; upgraded, it takes work again", async () => {
    const u = await server.user("pro")
    const f = await fake({})
    const r = await readJson<RunnerJson>(await register(u, f))
    const busy = await created(u, slowWorkflow({ seconds: 1, steps: 10 }))
    await poll("the runner to run it", async () => (f.submissions.length > 0 ? true : undefined))
    f.setVersion({ version: "0.3.40" })
    await f.restart()
    const seen = await poll("the version seen again", async () => {
      const now = await runner(u, r.id)
      return now.comfyui?.version === "0.3.40" ? now : undefined
    })
    expect(seen.warning).toContain("gets no work until it is upgraded")
    expect(seen.updated_at).toBe(r.updated_at)
    const refused = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "w" }, smokeWorkflow()) })
    expect([refused.status, (await readJson<ErrorBody>(refused)).message]).toEqual([
      400, "No runner available: runner \"gpu\" runs ComfyUI 0.3.40; WES needs ComfyUI 0.3.45 or later"
    ])
    await ended(u, busy.id)
    f.setVersion({ version: "0.38.1", jobsApi: true })
    const moved = await readJson<RunnerJson>(await server.fetch(`/v1/runner/${r.id}`, { ...json({ endpoint: `${f.url}/` }, u.auth), method: "PATCH" }))
    expect([moved.comfyui?.version, moved.comfyui?.jobs_api, moved.warning]).toEqual(["0.38.1", true, null])
    expect((await ended(u, (await created(u, smokeWorkflow({ color: 7 }))).id)).status).toBe("completed")
  })
})

describe("cancel and status through the jobs API", () => {
  /** A running workflow cancelled through WES: the requests its runner received for the cancel. */
  const cancelRequests = async (options: FakeComfyUIOptions) => {
    const u = await server.user("pro")
    const f = await fake(options)
    const r = await readJson<RunnerJson>(await register(u, f))
    const w = await created(u, slowWorkflow({ seconds: 30, steps: 300 }))
    await poll("it to run", async () => ((await detail(u, w.id)).status === "running" ? true : undefined))
    const from = f.requests.length
    expect((await server.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })).status).toBe(200)
    await poll("the runner to stop it", async () => (f.state.running === null ? true : undefined))
    // What was posted (reconciliation may cancel a second time, the same way, while it still sees the prompt).
    return { runner: r, posted: new Set(f.requests.slice(from).filter((q) => q.method === "POST").map((q) => q.path)), id: w.id }
  }

  it("cancels with one POST /api/jobs/{id}/cancel on a runner that has the jobs API", async () => {
    const { id, posted, runner: r } = await cancelRequests({ version: "0.38.1", jobsApi: true })
    expect(r.comfyui?.jobs_api).toBe(true)
    expect([...posted]).toEqual([`/api/jobs/${id}/cancel`])
  })

  it("cancels with POST /queue (delete) and POST /interrupt on ComfyUI 0.3.64", async () => {
    const { posted, runner: r } = await cancelRequests({})
    expect(r.comfyui?.jobs_api).toBe(false)
    expect([...posted].sort()).toEqual(["/interrupt", "/queue"])
  })
})

describe("node replacements", () => {
  const deprecated = {
    "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 3 } },
    "2": { class_type: "InvertOld", inputs: { pixels: ["1", 0] } },
    "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "replaced" } }
  }

  it("accepts and runs a workflow using a deprecated class on a runner that replaces it; refuses it where none does", async () => {
    const u = await server.user("pro")
    const old = await fake({})
    await register(u, old, "0.3.64")
    const refused = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "w" }, deprecated) })
    expect([refused.status, (await readJson<ErrorBody>(refused)).message]).toEqual([400, "No runner has what the workflow needs: runner \"0.3.64\" lacks node class InvertOld"])
    const newer = await fake({ version: "0.38.1", nodeReplacements: [{ old_node_id: "InvertOld", new_node_id: "ImageInvert", input_mapping: [{ new_id: "image", old_id: "pixels" }] }] })
    const r = await readJson<RunnerJson>(await register(u, newer, "newer"))
    const w = await created(u, deprecated)
    expect((await detail(u, w.id)).user_runner_id).toBe(r.id)
    expect((await ended(u, w.id)).status).toBe("completed")
  })
})
