import { parseWorkflowJson, UI_FORMAT_MESSAGE, validateWorkflowJson } from "../src/domain/WorkflowJson.js"
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"

const smoke = {
  "1": { class_type: "EmptyImage", inputs: { width: 64, height: 64, batch_size: 1, color: 255 } },
  "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
  "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "smoke/run" } }
}

const message = (u: unknown, field?: string) => {
  const r = validateWorkflowJson(u, field)
  if (Result.isSuccess(r)) throw new Error("expected a rejection")
  return r.failure
}

describe("workflow JSON", () => {
  it("accepts ComfyUI API format", () => {
    expect(Result.getOrThrow(validateWorkflowJson(smoke))).toBe(smoke)
  })

  it("rejects the UI (editor) format with a message that says to export in API format", () => {
    const ui = { id: "x", last_node_id: 3, nodes: [{ id: 1, type: "EmptyImage" }], links: [], version: 0.4 }
    const e = message(ui)
    expect(e.message).toBe(`workflow_json: ${UI_FORMAT_MESSAGE}`)
    expect(e.message).toContain("API format")
  })

  it("names the field it validates (body for templates)", () => {
    expect(message([], "body").details[0]!.field).toBe("body")
  })

  it.each([
    [[], "got an array"],
    [null, "got null"],
    ["text", "got a string"],
    [5, "got a number"],
    [{}, "has no nodes"]
  ])("rejects %j: %s", (value, expected) => {
    expect(message(value).message).toContain(expected)
  })

  it("rejects a node without class_type, naming the node", () => {
    const e = message({ "7": { inputs: {} } })
    expect(e.details[0]).toEqual({ field: "workflow_json.7.class_type", message: 'node "7" has no class_type (a non-empty string)' })
  })

  it("rejects a node that is not an object, and one without inputs", () => {
    expect(message({ "1": 5 }).message).toContain('node "1" must be an object')
    expect(message({ "1": { class_type: "X" } }).message).toContain('node "1" has no inputs object')
  })

  it("rejects a link to a node that does not exist", () => {
    const e = message({ "1": { class_type: "SaveImage", inputs: { images: ["9", 0] } } })
    expect(e.message).toContain('links to node "9", which does not exist')
  })

  it("rejects a link written with a numeric node id (ComfyUI fails those at validation)", () => {
    const e = message({ "1": { class_type: "A", inputs: {} }, "2": { class_type: "B", inputs: { x: [1, 0] } } })
    expect(e.message).toContain("source node id is not a string")
  })

  it("reports several problems at once, with a count in the message", () => {
    const e = message({ "1": { inputs: {} }, "2": { inputs: {} } })
    expect(e.details).toHaveLength(2)
    expect(e.message).toContain("(and 1 more)")
  })

  it("parses JSON text and reports invalid JSON as such", () => {
    expect(Result.isSuccess(parseWorkflowJson(JSON.stringify(smoke)))).toBe(true)
    const r = parseWorkflowJson("{not json")
    expect(Result.isFailure(r) && r.failure.message.startsWith("workflow_json: is not valid JSON")).toBe(true)
  })
})
