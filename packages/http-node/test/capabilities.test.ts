/**
 * Routing by capabilities, over HTTP, with the dispatcher and the real runner client against
 * fake ComfyUIs that have different node sets and model files: a workflow goes only to a runner
 * that has what it uses, create answers 400 naming what each runner lacks, and a runner whose
 * `/object_info` cannot be read is unknown, so it stays eligible.
 */
import { FakeComfyUI, type ObjectInfoOptions, slowWorkflow } from "@wes/runner-client/testing"
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

/** Every class of the fake's catalogue. */
const CATALOGUE = [
  "EmptyImage", "ImageInvert", "ImageScale", "MaskToImage", "ImageBlur", "SolidMask", "LoadImage", "SaveImage", "PreviewImage",
  "SaveAnimatedWEBP", "SaveImageWebsocket", "CreateVideo", "SaveVideo", "EmptyAudio", "SaveAudio", "PrimitiveString",
  "PrimitiveStringMultiline", "PrimitiveInt", "PrimitiveFloat", "PrimitiveBoolean", "StringConcatenate", "PreviewAny", "FakeSleep", "FakeLargeOutput"
]
const without = (...names: Array<string>) => CATALOGUE.filter((n) => !names.includes(n))

/** A checkpoint loader as ComfyUI 0.3.64 describes it, offering `files`. */
const checkpointLoader = (files: Array<string>) => ({
  CheckpointLoaderSimple: {
    input: { required: { ckpt_name: [files, { tooltip: "The name of the checkpoint (model) to load." }] } },
    output: ["MODEL", "CLIP", "VAE"],
    name: "CheckpointLoaderSimple"
  }
})

let server: TestServer
const fakes: Array<FakeComfyUI> = []

beforeAll(async () => {
  server = await startServer({
    dispatcher: fastDispatch,
    tiers: { pro: { runners: 10, active_workflows: 500 } },
    // Every reconnection reads again (production waits 10 s between two reads of one runner).
    capabilities: { minReadSpacing: "0 millis" }
  })
})
afterAll(async () => { await server.close() })
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})

type User = Awaited<ReturnType<TestServer["user"]>>

const fake = async (objectInfo: ObjectInfoOptions) => {
  const f = await FakeComfyUI.start({ objectInfo })
  fakes.push(f)
  return f
}

const addRunner = async (u: User, f: FakeComfyUI, name: string) => {
  const res = await server.fetch("/v1/runner", json({ name, endpoint: f.url }, u.auth))
  expect(res.status).toBe(201)
  return readJson<RunnerJson>(res)
}

const create = (u: User, workflow: unknown) =>
  server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "capable" }, workflow) })

const created = async (u: User, workflow: unknown) => {
  const res = await create(u, workflow)
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${await res.text()}`)
  return readJson<WorkflowSummaryJson>(res)
}

const detail = async (u: User, id: string) => readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${id}`, { headers: u.auth }))
/** The runner a new workflow was assigned to. */
const assigned = async (u: User, w: WorkflowSummaryJson) => (await detail(u, w.id)).user_runner_id

const runner = async (u: User, id: string) => readJson<RunnerJson>(await server.fetch(`/v1/runner/${id}`, { headers: u.auth }))

const finished = (u: User, id: string) =>
  poll(`workflow ${id} to end`, async () => {
    const w = await detail(u, id)
    return ["completed", "failed", "invalid", "cancelled"].includes(w.status) ? w : undefined
  })

describe("routing by capabilities", () => {
  it("sends every workflow to the runner that has its node classes, never to one that lacks them", async () => {
    const u = await server.user("pro")
    const lacking = await fake({ nodes: without("ImageInvert") })
    const capable = await fake({})
    const a = await addRunner(u, lacking, "no-invert")
    const b = await addRunner(u, capable, "full")
    const ws = await Promise.all(Array.from({ length: 4 }, (_, i) => created(u, smokeWorkflow({ color: i }))))
    expect(await Promise.all(ws.map((w) => assigned(u, w)))).toEqual([b.id, b.id, b.id, b.id])
    for (const w of ws) expect((await finished(u, w.id)).status).toBe("completed")
    expect(lacking.submissions).toHaveLength(0)
    expect(capable.submissions).toHaveLength(4)
    // A workflow both can run is spread as before (least work in flight).
    const anywhere = await Promise.all(Array.from({ length: 2 }, (_, i) => created(u, slowWorkflow({ seconds: 0.2, prefix: `any${i}` }))))
    expect(new Set(await Promise.all(anywhere.map((w) => assigned(u, w))))).toEqual(new Set([a.id, b.id]))
    for (const w of anywhere) await finished(u, w.id)
  })

  it("answers 400 naming what is missing, and which runner lacks what when they lack different things", async () => {
    const u = await server.user("pro")
    const noInvert = await addRunner(u, await fake({ nodes: without("ImageInvert") }), "no-invert")
    const otherModels = await addRunner(u, await fake({ nodes: without("ImageBlur"), extra: checkpointLoader(["v1-5.safetensors"]) }), "sd15-only")
    const workflow = {
      ...smokeWorkflow(),
      "4": { class_type: "ImageBlur", inputs: { image: ["2", 0], blur_radius: 1, sigma: 1 } },
      "5": { class_type: "CheckpointLoaderSimple", inputs: { ckpt_name: "#choice(model, sdxl.safetensors, v1-5.safetensors)" } }
    }
    const res = await create(u, workflow)
    const body = await readJson<ErrorBody>(res)
    expect(res.status).toBe(400)
    expect(body.message).toBe(
      "No runner has what the workflow needs: " +
        "runner \"no-invert\" lacks node classes CheckpointLoaderSimple, ImageInvert; " +
        "runner \"sd15-only\" lacks node class ImageBlur; model file sdxl.safetensors (CheckpointLoaderSimple.ckpt_name)"
    )
    expect(body.details).toEqual(expect.arrayContaining([
      { field: `runner:${noInvert.id}`, message: "runner \"no-invert\" lacks node classes: CheckpointLoaderSimple, ImageInvert" },
      {
        field: `runner:${otherModels.id}`,
        message: "runner \"sd15-only\" lacks node classes: ImageBlur; model files: sdxl.safetensors (CheckpointLoaderSimple.ckpt_name)"
      }
    ]))
    // The model is checked with the value the #choice parameter takes.
    const { "4": _blur, ...noBlur } = workflow
    const sd15 = await create(u, noBlur)
    expect(sd15.status).toBe(400)
    const form = workflowForm({ name: "sd15", "#model": "v1-5.safetensors" }, noBlur)
    const chosen = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: form })
    expect(chosen.status).toBe(201)
    const w = await readJson<WorkflowSummaryJson>(chosen)
    expect(await assigned(u, w)).toBe(otherModels.id)
    await finished(u, w.id)
  })

  it("keeps a runner whose /object_info fails eligible (capabilities unknown, shown as null)", async () => {
    const u = await server.user("pro")
    const failing = await fake({ failStatus: 500 })
    const unknown = await addRunner(u, failing, "unknown")
    const known = await addRunner(u, await fake({ nodes: without("ImageInvert") }), "known")
    expect(unknown.capabilities).toBeNull()
    expect(known.capabilities).toMatchObject({ node_classes: CATALOGUE.length - 1, model_files: 0, hash: expect.stringMatching(/^[0-9a-f]{64}$/) })
    expect((await runner(u, known.id)).capabilities).toEqual(known.capabilities)
    const list = await readJson<{ runners: Array<RunnerJson> }>(await server.fetch("/v1/runner", { headers: u.auth }))
    expect(list.runners.map((r) => [r.name, r.capabilities === null])).toEqual([["known", false], ["unknown", true]])
    const w = await created(u, smokeWorkflow({ color: 7 }))
    expect(await assigned(u, w)).toBe(unknown.id)
    expect((await finished(u, w.id)).status).toBe("completed")
  })

  it("does not move a workflow to a runner that lacks its nodes when its own runner stops answering", async () => {
    const u = await server.user("pro")
    const unknown = await fake({ failStatus: 500 })
    await addRunner(u, unknown, "unknown")
    const lacking = await fake({ nodes: without("ImageInvert") })
    await addRunner(u, lacking, "no-invert")
    unknown.failHttp(503)
    const w = await created(u, smokeWorkflow({ color: 11 }))
    const end = await finished(u, w.id)
    expect([end.status, end.exception_type]).toEqual(["failed", "RunnerUnavailable"])
    expect(lacking.submissions).toHaveLength(0)
  })

  it("routes a paid tier's workflow among managed runners by capabilities too; the operator sees them", async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const register = async (f: FakeComfyUI, name: string) => {
      const res = await server.fetch("/admin/v1/managed-runners", json({ name, runner_type: "pro", endpoint: f.url, tags: ["managed-caps"] }, admin))
      expect(res.status).toBe(201)
      return readJson<ManagedRunnerJson>(res)
    }
    const lacking = await register(await fake({ nodes: without("ImageInvert") }), "managed-no-invert")
    const capable = await register(await fake({}), "managed-full")
    expect([lacking.capabilities?.node_classes, capable.capabilities?.node_classes]).toEqual([CATALOGUE.length - 1, CATALOGUE.length])
    const u = await server.user("pro")
    const form = workflowForm({ name: "managed", tags: "managed-caps" }, smokeWorkflow({ color: 13 }))
    const res = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: form })
    expect(res.status).toBe(201)
    const w = await detail(u, (await readJson<WorkflowSummaryJson>(res)).id)
    expect(w.managed_runner_id).toBe(capable.id)
    await finished(u, w.id)
    for (const r of [lacking, capable]) {
      expect((await server.fetch(`/admin/v1/managed-runners/${r.id}`, { ...json({ status: "disabled" }, admin), method: "PATCH" })).status).toBe(200)
    }
  })

  it("reads a runner again when its ComfyUI restarts, and again when its endpoint changes", async () => {
    const u = await server.user("pro")
    const f = await fake({ nodes: without("ImageInvert") })
    const r = await addRunner(u, f, "restarting")
    expect((await create(u, smokeWorkflow())).status).toBe(400)
    // Work the runner can do, so its driver connects; then ComfyUI restarts with the node installed.
    const busy = await created(u, slowWorkflow({ seconds: 5, steps: 50 }))
    await poll("the runner to run it", async () => (f.submissions.length > 0 ? true : undefined))
    f.setObjectInfo({})
    await f.restart()
    const after = await poll("capabilities read again", async () => {
      const now = (await runner(u, r.id)).capabilities
      return now !== null && now.hash !== r.capabilities!.hash ? now : undefined
    })
    expect(after.node_classes).toBe(CATALOGUE.length)
    expect(await assigned(u, await created(u, smokeWorkflow({ color: 9 })))).toBe(r.id)
    await finished(u, busy.id)
    // A new endpoint: its own capabilities, whatever the old one had.
    const other = await fake({ nodes: ["EmptyImage", "SaveImage"] })
    const moved = await readJson<RunnerJson>(await server.fetch(`/v1/runner/${r.id}`, { ...json({ endpoint: other.url }, u.auth), method: "PATCH" }))
    expect(moved.capabilities?.node_classes).toBe(2)
  })
})
