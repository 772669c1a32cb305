import * as Arbitrary from "effect/Arbitrary"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { CurrentUser } from "../src/Account.js"
import { currentUserJson, detailJson, summaryJson } from "../src/Wire.js"
import { toDetail, toSummary, Workflow, WorkflowDetail, WorkflowSummary } from "../src/Workflow.js"

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
})
