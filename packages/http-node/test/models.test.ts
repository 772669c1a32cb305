/**
 * Issue 34, item 3: a workflow and a template may declare the model files they need (`models`, a
 * JSON field of their forms). A workflow created from a template takes the template's files plus
 * its own, one per folder/filename; the same place declared with another sha256 is a 400 naming
 * it. Both show `models` in their views; a rerun keeps the original's.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type ErrorBody,
  json,
  NO_WORKFLOW,
  readJson,
  type RunnerJson,
  smokeWorkflow,
  startServer,
  type TestServer,
  workflowForm
} from "./harness.js"

const checkpoint = { url: "https://models.test/sdxl.safetensors", sha256: "a".repeat(64), folder: "checkpoints", filename: "sdxl.safetensors" }
const lora = { url: "https://models.test/detail.safetensors", sha256: "b".repeat(64), folder: "loras", filename: "detail.safetensors" }
const vae = { url: "https://models.test/vae.safetensors", sha256: "d".repeat(64), folder: "vae", filename: "vae.safetensors" }

interface WithModels {
  readonly id: string
  readonly models: ReadonlyArray<unknown>
}

describe("model files of workflows and templates", () => {
  let server: TestServer
  beforeAll(async () => { server = await startServer() })
  afterAll(async () => { await server.close() })

  const userWithRunner = async () => {
    const u = await server.user("pro")
    await readJson<RunnerJson>(await server.fetch("/v1/runner", json({ name: "r", endpoint: "http://127.0.0.1:8188" }, u.auth)))
    return u
  }
  const template = async (auth: Record<string, string>, models: unknown) => {
    const form = new FormData()
    form.append("name", "t")
    form.append("description", "d")
    form.append("body", new Blob([JSON.stringify(smokeWorkflow())]), "t.json")
    form.append("models", new Blob([JSON.stringify(models)]), "models.json")
    return server.fetch("/v1/template", { method: "POST", headers: auth, body: form })
  }
  const detail = async (auth: Record<string, string>, id: string) => readJson<WithModels>(await server.fetch(`/v1/workflow/${id}`, { headers: auth }))

  it("keeps a template's models and shows them; a workflow from it takes them plus its own, one per folder/filename", async () => {
    const u = await userWithRunner()
    const t = await readJson<WithModels>(await template(u.auth, [checkpoint, lora]))
    expect(t.models).toEqual([checkpoint, lora])
    expect((await readJson<WithModels>(await server.fetch(`/v1/template/${t.id}`, { headers: u.auth }))).models).toEqual([checkpoint, lora])
    // Its own: the lora again (the same place and hash: kept once) and a vae, as a text field.
    const res = await server.fetch("/v1/workflow", {
      method: "POST",
      headers: u.auth,
      body: workflowForm({ name: "w", template_id: t.id, models: JSON.stringify([lora, vae]) }, NO_WORKFLOW)
    })
    expect(res.status).toBe(201)
    const created = await readJson<WithModels>(res)
    expect((await detail(u.auth, created.id)).models).toEqual([checkpoint, lora, vae])
    // A rerun keeps the original's.
    const rerun = await readJson<WithModels>(await server.fetch(`/v1/workflow/${created.id}/rerun`, { method: "POST", headers: u.auth, body: new FormData() }))
    expect((await detail(u.auth, rerun.id)).models).toEqual([checkpoint, lora, vae])
    // A workflow that declares none shows an empty list.
    const plain = await readJson<WithModels>(await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "p" }) }))
    expect((await detail(u.auth, plain.id)).models).toEqual([])
  })

  it("refuses the same folder/filename declared with another sha256 with a 400 naming it", async () => {
    const u = await userWithRunner()
    const t = await readJson<WithModels>(await template(u.auth, [checkpoint]))
    const res = await server.fetch("/v1/workflow", {
      method: "POST",
      headers: u.auth,
      body: workflowForm({ name: "w", template_id: t.id, models: JSON.stringify([{ ...checkpoint, sha256: "e".repeat(64) }]) }, NO_WORKFLOW)
    })
    const body = await readJson<ErrorBody>(res)
    expect([res.status, body.details?.map((d) => d.field)]).toEqual([400, ["models"]])
    expect(body.message).toContain("checkpoints/sdxl.safetensors")
    expect(body.message).toContain("e".repeat(64))
  })

  it("refuses a malformed model file naming the field", async () => {
    const u = await userWithRunner()
    const bad = await server.fetch("/v1/workflow", {
      method: "POST",
      headers: u.auth,
      body: workflowForm({ name: "w", models: JSON.stringify([{ ...checkpoint, folder: "Downloads", sha256: "xyz" }]) })
    })
    const body = await readJson<ErrorBody>(bad)
    expect(bad.status).toBe(400)
    expect(body.details?.every((d) => d.field.startsWith("models"))).toBe(true)
    expect(body.message).toContain("models")
    const badTemplate = await template(u.auth, [{ ...checkpoint, url: "ftp://models.test/x" }])
    expect(badTemplate.status).toBe(400)
  })

  it("updates a template's models with PUT, refusing one place declared twice with different hashes", async () => {
    const u = await userWithRunner()
    const t = await readJson<WithModels>(await template(u.auth, [checkpoint]))
    const put = (models: unknown) => {
      const form = new FormData()
      form.append("models", JSON.stringify(models))
      return server.fetch(`/v1/template/${t.id}`, { method: "PUT", headers: u.auth, body: form })
    }
    const conflict = await put([lora, { ...lora, sha256: "f".repeat(64) }])
    expect([conflict.status, (await readJson<ErrorBody>(conflict)).message]).toEqual([
      400,
      `models: loras/detail.safetensors is declared twice with different sha256 (${"b".repeat(64)} and ${"f".repeat(64)})`
    ])
    const updated = await readJson<WithModels>(await put([lora]))
    expect(updated.models).toEqual([lora])
  })
})
