/**
 * The fake's newer routes, as newer ComfyUI's server.py, comfy_execution/jobs.py and
 * app/node_replace_manager.py answer them (behind options: 0.3.64 has none of them, and answers
 * them as its static files do: an empty 404 for a GET, a 405 for a POST).
 */
import { saveImageWorkflow } from "@wes/runner-client/testing"
import { describe, expect, it } from "vitest"
import { http, useFake, uuid } from "./harness.js"

describe("fake ComfyUI: the jobs API (jobsApi: true)", () => {
  it("lists jobs by status with pagination, and validates its parameters as ComfyUI does", async () => {
    const fake = await useFake({ jobsApi: true, createTime: true })
    const api = http(fake)
    const done = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "d" }), prompt_id: done })
    await fake.whenFinished(done)
    fake.hold()
    const running = uuid()
    const pending = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "r" }), prompt_id: running })
    await fake.whenRunning(running)
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "p" }), prompt_id: pending })

    const all = (await api.get("/api/jobs")).json<{ jobs: Array<Record<string, unknown>>; pagination: unknown }>()
    // Newest first (by create_time); list items carry no outputs or workflow.
    expect(all.jobs.map((j) => [j["id"], j["status"]])).toEqual([[pending, "pending"], [running, "in_progress"], [done, "completed"]])
    expect(all.pagination).toEqual({ offset: 0, limit: null, total: 3, has_more: false })
    expect(Object.keys(all.jobs[2]!).sort()).toEqual([
      "create_time", "execution_end_time", "execution_start_time", "id", "outputs_count", "preview_output", "previewable_outputs_count", "priority", "status"
    ])
    expect(all.jobs[2]).toMatchObject({ outputs_count: 1, previewable_outputs_count: 1, preview_output: { filename: "d_00001_.png", nodeId: "3", mediaType: "images", type: "output" } })
    const page = (await api.get("/api/jobs?status=in_progress,completed&sort_order=asc&limit=1&offset=1")).json<{ jobs: Array<{ id: string }>; pagination: unknown }>()
    expect([page.jobs.map((j) => j.id), page.pagination]).toEqual([[running], { offset: 1, limit: 1, total: 2, has_more: false }])

    for (const [query, error] of [
      ["status=done", "Invalid status value(s): done. Valid values: pending, in_progress, completed, failed, cancelled"],
      ["sort_by=name", "sort_by must be 'created_at' or 'execution_duration'"],
      ["sort_order=up", "sort_order must be 'asc' or 'desc'"],
      ["limit=0", "limit must be a positive integer"],
      ["limit=x", "limit must be an integer"],
      ["offset=x", "offset must be an integer"]
    ] as const) {
      const r = await api.get(`/api/jobs?${query}`)
      expect([r.status, r.json()]).toEqual([400, { error }])
    }
    fake.release()
  })

  it("gives one job in detail, 404 for an unknown id, and serves the routes under /api only (and /api/api, ComfyUI's alias)", async () => {
    const fake = await useFake({ jobsApi: true })
    const api = http(fake)
    const id = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "j" }), prompt_id: id, client_id: "c" })
    await fake.whenFinished(id)
    const job = (await api.get(`/api/jobs/${id}`)).json<Record<string, unknown>>()
    const history = (await api.get(`/history/${id}`)).json<Record<string, { outputs: unknown; status: unknown; prompt: Array<unknown> }>>()[id]!
    expect(job).toMatchObject({
      id,
      status: "completed",
      outputs: history.outputs,
      execution_status: history.status,
      workflow: { prompt: history.prompt[2], extra_data: history.prompt[3] }
    })
    expect((await api.get(`/api/api/jobs/${id}`)).json()).toEqual(job)
    const unknown = await api.get(`/api/jobs/${uuid()}`)
    expect([unknown.status, unknown.json()]).toEqual([404, { error: "Job not found" }])
    const notARoute = await api.get(`/jobs/${id}`)
    expect([notARoute.status, notARoute.text]).toEqual([404, ""])
  })

  it("cancels one job whatever its state, and a batch of canonical ids, answering whether anything was cancelled", async () => {
    const fake = await useFake({ jobsApi: true })
    const api = http(fake)
    fake.hold()
    const running = uuid()
    const pending = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "r" }), prompt_id: running })
    await fake.whenRunning(running)
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "p" }), prompt_id: pending })
    expect((await api.post(`/api/jobs/${pending}/cancel`, "")).json()).toEqual({ cancelled: true })
    expect(fake.state.pending).toEqual([])
    expect((await api.post(`/api/jobs/${pending}/cancel`, "")).json()).toEqual({ cancelled: false })
    expect((await api.post("/api/jobs/cancel", { job_ids: [running, uuid()] })).json()).toEqual({ cancelled: true })
    await fake.whenFinished(running)
    expect((await api.get(`/api/jobs/${running}`)).json()).toMatchObject({ status: "cancelled" })
    expect((await api.post(`/api/jobs/${running}/cancel`, "")).json()).toEqual({ cancelled: false })

    for (const [body, answer] of [
      ["{", { error: "Request body must be valid JSON" }],
      [{ job_ids: "x" }, { error: "job_ids must be a list" }],
      [{ job_ids: [running.toUpperCase(), 7] }, { error: "job_ids contains invalid id(s)", invalid_ids: [running.toUpperCase(), "7"] }]
    ] as const) {
      const r = await api.post("/api/jobs/cancel", body)
      expect([r.status, r.json()]).toEqual([400, answer])
    }
  })
})

describe("fake ComfyUI: node replacements (nodeReplacements)", () => {
  const replacements = [
    { old_node_id: "InvertOld", new_node_id: "ImageInvert", old_widget_ids: [], input_mapping: [{ new_id: "image", old_id: "pixels" }] },
    { old_node_id: "BlurOld", new_node_id: "ImageBlur", input_mapping: [{ new_id: "image", old_id: "image" }, { new_id: "blur_radius", set_value: 1 }, { new_id: "sigma", set_value: 1.0 }] },
    { old_node_id: "Unloadable", new_node_id: "NotLoaded" }
  ]

  it("lists them as NodeReplace.as_dict() by deprecated class", async () => {
    const api = http(await useFake({ nodeReplacements: replacements }))
    expect((await api.get("/node_replacements")).json()).toEqual({
      InvertOld: [{ new_node_id: "ImageInvert", old_node_id: "InvertOld", old_widget_ids: [], input_mapping: [{ new_id: "image", old_id: "pixels" }], output_mapping: null }],
      BlurOld: [{ new_node_id: "ImageBlur", old_node_id: "BlurOld", old_widget_ids: null, input_mapping: replacements[1]!.input_mapping, output_mapping: null }],
      Unloadable: [{ new_node_id: "NotLoaded", old_node_id: "Unloadable", old_widget_ids: null, input_mapping: null, output_mapping: null }]
    })
  })

  it("runs a prompt with deprecated classes as their replacements, mapping inputs, and refuses one whose replacement is not loaded", async () => {
    const fake = await useFake({ nodeReplacements: replacements })
    const api = http(fake)
    const id = uuid()
    const prompt = {
      "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
      "2": { class_type: "InvertOld", inputs: { pixels: ["1", 0] } },
      "3": { class_type: "BlurOld", inputs: { image: ["2", 0] } },
      "4": { class_type: "SaveImage", inputs: { images: ["3", 0], filename_prefix: "replaced" } }
    }
    expect((await api.post("/prompt", { prompt, prompt_id: id })).status).toBe(200)
    await fake.whenFinished(id)
    const entry = (await api.get(`/history/${id}`)).json<Record<string, { prompt: Array<unknown>; status: { status_str: string } }>>()[id]!
    expect(entry.status.status_str).toBe("success")
    expect(entry.prompt[2]).toMatchObject({
      "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
      "3": { class_type: "ImageBlur", inputs: { image: ["2", 0], blur_radius: 1, sigma: 1.0 } }
    })
    const refused = await api.post("/prompt", { prompt: { ...prompt, "2": { class_type: "Unloadable", inputs: {} } }, prompt_id: uuid() })
    expect(refused.status).toBe(400)
  })
})

describe("fake ComfyUI 0.3.64: the newer routes are missing", () => {
  it("answers them as its static files: an empty 404 for a GET, 405 for a POST", async () => {
    const api = http(await useFake())
    for (const path of ["/api/jobs?status=in_progress&limit=1", `/api/jobs/${uuid()}`, "/node_replacements", "/api/node_replacements"]) {
      const r = await api.get(path)
      expect([r.status, r.headers.get("content-type"), r.text]).toEqual([404, "application/octet-stream", ""])
    }
    const post = await api.post(`/api/jobs/${uuid()}/cancel`, "")
    expect([post.status, post.headers.get("allow"), post.text]).toEqual([405, "GET,HEAD", "405: Method Not Allowed"])
  })
})
