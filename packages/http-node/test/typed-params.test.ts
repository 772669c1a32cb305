/**
 * Parameters typed by the input they fill, over HTTP against a fake ComfyUI: a `$text` value for
 * a BOOLEAN input arrives in the posted prompt as a JSON boolean (ComfyUI applies `bool()` to a
 * string, so the text "false" would be True), and a value the input does not take is a 400 at
 * create naming the parameter, the node and the type.
 */
import { FakeComfyUI } from "@wes/runner-client/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ErrorBody, fastDispatch, json, readJson, startServer, type TestServer, type WorkflowDetailJson, workflowForm, type WorkflowSummaryJson } from "./harness.js"
import { poll } from "./polling.js"

let server: TestServer
let comfy: FakeComfyUI
let user: Awaited<ReturnType<TestServer["user"]>>

beforeAll(async () => {
  ;[server, comfy] = await Promise.all([startServer({ dispatcher: fastDispatch }), FakeComfyUI.start()])
  user = await server.user("pro")
  expect((await server.fetch("/v1/runner", json({ name: "fake", endpoint: comfy.url }, user.auth))).status).toBe(201)
})
afterAll(async () => {
  await server.close()
  await comfy.close()
})

/** PrimitiveBoolean (a BOOLEAN input) -> PreviewAny, which shows what the node received. */
const booleanWorkflow = {
  "1": { class_type: "PrimitiveBoolean", inputs: { value: "$text(flag)" } },
  "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } },
  "3": { class_type: "EmptyImage", inputs: { width: "$text(width, 8)", height: 8, batch_size: 1, color: 0 } },
  "4": { class_type: "SaveImage", inputs: { images: ["3", 0], filename_prefix: "$text(flag)" } }
}

const create = (fields: Record<string, string>) =>
  server.fetch("/v1/workflow", { method: "POST", headers: user.auth, body: workflowForm({ name: "typed", ...fields }, booleanWorkflow) })

const finished = (id: string): Promise<WorkflowDetailJson> =>
  poll(`workflow ${id} to end`, async () => {
    const w = await readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${id}`, { headers: user.auth }))
    return ["completed", "failed", "invalid", "cancelled"].includes(w.status) ? w : undefined
  })

describe("parameters typed by the input they fill", () => {
  it("posts false and true to a BOOLEAN input as JSON booleans, and the same text to a STRING input as text", async () => {
    for (const [sent, posted] of [["false", false], ["TRUE", true], ["no", false]] as const) {
      const res = await create({ $flag: sent })
      expect(res.status).toBe(201)
      const w = await readJson<WorkflowSummaryJson>(res)
      expect((await finished(w.id)).status).toBe("completed")
      const submission = comfy.submissions.find((s) => s.prompt_id === w.id)!
      const prompt = (submission.body as { prompt: Record<string, { inputs: Record<string, unknown> }> }).prompt
      expect(prompt["1"]!.inputs["value"]).toBe(posted)
      expect(prompt["4"]!.inputs["filename_prefix"]).toBe(sent)
      // ... and the node received it: PreviewAny shows Python's str() of the value.
      const history = await (await fetch(`${comfy.url}/history/${w.id}`)).json() as Record<string, { outputs: Record<string, { text: Array<string> }> }>
      expect(history[w.id]!.outputs["2"]!.text).toEqual([posted ? "True" : "False"])
    }
  })

  it("answers 400 naming the parameter, the node and the type when the input does not take the value", async () => {
    const before = comfy.submissions.length
    const res = await create({ $flag: "maybe" })
    expect(res.status).toBe(400)
    const message = '$flag "maybe" cannot fill node "1" (PrimitiveBoolean.value), which takes a BOOLEAN (true/false, yes/no or 1/0)'
    expect(await readJson<ErrorBody>(res)).toEqual({
      status: 400,
      message: `Parameter validation failed: ${message}`,
      details: [{ field: "$flag", message: message.slice("$flag ".length) }]
    })
    const wide = await readJson<ErrorBody>(await create({ $flag: "true", $width: "0" }))
    expect(wide.message).toBe('Parameter validation failed: $width "0" cannot fill node "3" (EmptyImage.width), which takes an INT from 1 to 16384')
    expect(comfy.submissions.length).toBe(before)
  })

  it("describes a definition's parameters with the type each value is converted to on its runners", async () => {
    const res = await server.fetch("/v1/workflow/parameters", json({
      workflow_json: {
        ...booleanWorkflow,
        "2": { class_type: "SaveAnimatedWEBP", inputs: { images: ["3", 0], filename_prefix: "x", fps: 6, lossless: "$text(flag)", quality: 80, method: "#choice(method)" } },
        "4": { class_type: "LoadImage", inputs: { image: "$file(photo)" } }
      },
      tags: []
    }, user.auth))
    expect(res.status).toBe(200)
    const { parameters } = await readJson<{ parameters: Array<Record<string, unknown>> }>(res)
    expect(parameters).toEqual([
      {
        field: "$flag", placeholder: "$text(flag)", kind: "text", default: null, options: [], type: { type: "BOOLEAN" },
        inputs: [
          { node: "1", class_type: "PrimitiveBoolean", input: "value", type: { type: "BOOLEAN" } },
          { node: "2", class_type: "SaveAnimatedWEBP", input: "lossless", type: { type: "BOOLEAN" } }
        ]
      },
      {
        field: "#method", placeholder: "#choice(method)", kind: "choice", default: null, options: [],
        type: { type: "COMBO", options: ["default", "fastest", "slowest"] },
        inputs: [{ node: "2", class_type: "SaveAnimatedWEBP", input: "method", type: { type: "COMBO", options: ["default", "fastest", "slowest"] } }]
      },
      {
        field: "$width", placeholder: "$text(width)", kind: "text", default: "8", options: [], type: { type: "INT", min: 1, max: 16384, step: 1 },
        inputs: [{ node: "3", class_type: "EmptyImage", input: "width", type: { type: "INT", min: 1, max: 16384, step: 1 } }]
      },
      {
        field: "$photo", placeholder: "$file(photo)", kind: "file", default: null, options: [], type: null,
        inputs: [{ node: "4", class_type: "LoadImage", input: "image", type: null }]
      }
    ])
    const neither = await server.fetch("/v1/workflow/parameters", json({}, user.auth))
    expect(neither.status).toBe(400)
    expect((await readJson<ErrorBody>(neither)).message).toBe("workflow_json: is required")
  })
})
