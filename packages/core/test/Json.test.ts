import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { Fixtures } from "@wes/core/testing"
import { toDetail, Workflow, WorkflowDetail } from "../src/domain/Workflow.js"

describe("workflow JSON through the schemas", () => {
  it("keeps a key named __proto__, as the user sent it, through encoding and decoding", () => {
    // A fixed workflow: a random one spans dates far enough apart that its queue_ms is not a safe integer.
    const w = Fixtures.workflow(Fixtures.uuid(), { status: "completed", started_at: Fixtures.at(1), completed_at: Fixtures.at(2) })
    const sent = `{"__proto__":{"class_type":"Note","inputs":{}},"n1":{"class_type":"A","inputs":{}}}`
    const workflow_json = JSON.parse(sent) as typeof w.workflow_json
    const encoded = Schema.encodeSync(WorkflowDetail)(toDetail({ ...w, workflow_json }))
    expect(JSON.stringify(encoded.workflow_json)).toBe(sent)
    const decoded = Schema.decodeUnknownSync(Workflow)(Schema.encodeSync(Workflow)({ ...w, workflow_json }))
    expect(Object.hasOwn(decoded.workflow_json, "__proto__")).toBe(true)
    expect(Object.getPrototypeOf(decoded.workflow_json)).toBe(Object.prototype)
  })
})
