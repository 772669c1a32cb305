import * as Arbitrary from "effect/Arbitrary"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { CurrentUser } from "../src/accounts/Account.js"
import { currentUserJson, detailJson, summaryJson } from "../src/Wire.js"
import { toDetail, toSummary, Workflow, WorkflowDetail, WorkflowSummary } from "../src/workflows/Workflow.js"

const same = (a: unknown, b: unknown) => expect(JSON.stringify(a)).toBe(JSON.stringify(b))

describe("hand-written wire forms", () => {
  it("give the same JSON, byte for byte, as encoding with the Schemas", () => {
    const encodeSummary = Schema.encodeSync(WorkflowSummary)
    const encodeDetail = Schema.encodeSync(WorkflowDetail)
    FastCheck.assert(FastCheck.property(Arbitrary.make(Workflow), (w) => {
      same(summaryJson(w), encodeSummary(toSummary(w)))
      same(detailJson(w), encodeDetail(toDetail(w)))
    }), { numRuns: 500 })
    const encodeUser = Schema.encodeSync(CurrentUser)
    FastCheck.assert(FastCheck.property(Arbitrary.make(CurrentUser), (u) => {
      same(currentUserJson(u), encodeUser(u))
    }), { numRuns: 500 })
  })

  it("keep a workflow JSON key named __proto__, as the user sent it", () => {
    const w = FastCheck.sample(Arbitrary.make(Workflow), 1)[0]!
    const workflow_json = JSON.parse(`{"__proto__":{"class_type":"Note","inputs":{}},"n1":{"class_type":"A","inputs":{}}}`) as typeof w.workflow_json
    const encoded = Schema.encodeSync(WorkflowDetail)(toDetail({ ...w, workflow_json }))
    expect(JSON.stringify(encoded.workflow_json)).toBe(`{"__proto__":{"class_type":"Note","inputs":{}},"n1":{"class_type":"A","inputs":{}}}`)
    same(detailJson({ ...w, workflow_json }), encoded)
    const decoded = Schema.decodeUnknownSync(Workflow)(Schema.encodeSync(Workflow)({ ...w, workflow_json }))
    expect(Object.hasOwn(decoded.workflow_json, "__proto__")).toBe(true)
    expect(Object.getPrototypeOf(decoded.workflow_json)).toBe(Object.prototype)
  })
})
