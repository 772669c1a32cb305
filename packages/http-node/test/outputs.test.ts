/**
 * Every kind of output a workflow produces, through the server with the dispatcher and the real
 * runner client against the fake ComfyUI: images a node sends over the WebSocket
 * (`SaveImageWebsocket`) next to a sampler's previews, video and audio files with their content
 * types. Each test waits on the workflow's event stream, which ends with `done`.
 */
import { audioWorkflow, FakeComfyUI, type FakeComfyUIOptions, inspectImage, videoWorkflow } from "@wes/runner-client/testing"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { fastDispatch, json, readJson, startServer, type TestServer, workflowForm, type WorkflowSummaryJson } from "./harness.js"

let server: TestServer
const fakes: Array<FakeComfyUI> = []

beforeAll(async () => { server = await startServer({ dispatcher: fastDispatch }) })
afterAll(async () => { await server.close() })
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})

type User = Awaited<ReturnType<TestServer["user"]>>

interface OutputJson {
  readonly id: string
  readonly node_id: string
  readonly filename: string
  readonly subfolder: string
  readonly type: string
  readonly content_type: string
  readonly size: number
}

/** A user with one runner: a fake started with `options`. */
const userWithFake = async (options: FakeComfyUIOptions = {}) => {
  const f = await FakeComfyUI.start(options)
  fakes.push(f)
  const u = await server.user("pro")
  expect((await server.fetch("/v1/runner", json({ name: "runner", endpoint: f.url }, u.auth))).status).toBe(201)
  return u
}

/** Creates the workflow and follows its events to `done`: the events' names and data. */
const run = async (u: User, workflow: unknown) => {
  const res = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "outputs" }, workflow) })
  expect(res.status).toBe(201)
  const { id } = await readJson<WorkflowSummaryJson>(res)
  const stream = await (await server.fetch(`/v1/workflow/${id}/subscribe`, { headers: { ...u.auth, "last-event-id": "0" } })).text()
  const events = stream.split("\n\n").filter((b) => b.startsWith("id:")).map((block) => {
    const data = block.split("\n").find((l) => l.startsWith("data:"))!.slice(5).trim()
    return { event: block.split("\n").find((l) => l.startsWith("event:"))!.slice(6).trim(), data: JSON.parse(data) as Record<string, unknown> }
  })
  const { outputs } = await readJson<{ outputs: Array<OutputJson> }>(await server.fetch(`/v1/workflow/${id}/outputs`, { headers: u.auth }))
  return { id, events, outputs }
}

const download = async (u: User, id: string, output: OutputJson) => {
  const res = await server.fetch(`/v1/workflow/${id}/outputs/${output.id}`, { headers: u.auth })
  expect(res.status).toBe(200)
  return { type: res.headers.get("content-type"), bytes: Buffer.from(await res.arrayBuffer()) }
}

describe("outputs", () => {
  it("keeps the images SaveImageWebsocket sends over the WebSocket as downloadable PNG outputs; the sampler's previews are not outputs", async () => {
    // FakeSleep stands for a sampler: a preview image with each of its steps.
    const u = await userWithFake({ previews: true })
    const { id, events, outputs } = await run(u, {
      "1": { class_type: "EmptyImage", inputs: { width: 40, height: 24, batch_size: 2, color: 0x336699 } },
      "2": { class_type: "FakeSleep", inputs: { seconds: 0.05, steps: 3, value: ["1", 0] } },
      "3": { class_type: "SaveImageWebsocket", inputs: { images: ["2", 0] } }
    })
    expect(events.at(-1)).toMatchObject({ event: "done", data: { status: "completed" } })
    expect(events.filter((e) => e.event === "progress" && e.data["node"] === "2")).toHaveLength(3)
    expect(outputs.map((o) => [o.node_id, o.filename, o.subfolder, o.type, o.content_type])).toEqual([
      ["3", "websocket_3_00001_.png", "", "websocket", "image/png"],
      ["3", "websocket_3_00002_.png", "", "websocket", "image/png"]
    ])
    expect(events.filter((e) => e.event === "output").map((e) => e.data)).toEqual(outputs)
    for (const o of outputs) {
      const file = await download(u, id, o)
      expect(file.type).toBe("image/png")
      expect(file.bytes.length).toBe(o.size)
      expect(inspectImage(file.bytes)).toEqual({ format: "PNG", width: 40, height: 24, color: 0x336699 })
    }
  })

  it("keeps video and audio outputs with their content types, even from a runner whose mime table lacks them", async () => {
    // A ComfyUI in a slim container answers application/octet-stream for .flac.
    const u = await userWithFake({ mimeTypes: "builtin" })
    const video = videoWorkflow({ prefix: "media/clip" })
    const audio = audioWorkflow({ prefix: "media/voice" })
    const { id, events, outputs } = await run(u, { ...video, "11": audio["1"]!, "12": { ...audio["2"]!, inputs: { ...audio["2"]!.inputs, audio: ["11", 0] } } })
    expect(events.at(-1)).toMatchObject({ event: "done", data: { status: "completed" } })
    expect(outputs.map((o) => [o.node_id, o.filename, o.subfolder, o.type, o.content_type]).sort()).toEqual([
      ["12", "voice_00001_.flac", "media", "output", "audio/flac"],
      ["3", "clip_00001_.mp4", "media", "output", "video/mp4"]
    ])
    for (const o of outputs) {
      const file = await download(u, id, o)
      expect(file.type).toBe(o.content_type)
      expect(file.bytes.toString("latin1", ...(o.content_type === "video/mp4" ? [4, 8] : [0, 4]))).toBe(o.content_type === "video/mp4" ? "ftyp" : "fLaC")
    }
  })
})
