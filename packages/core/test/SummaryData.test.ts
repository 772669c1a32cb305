import { Fixtures } from "@wes/core/testing"
import * as DateTime from "effect/DateTime"
import { describe, expect, it } from "vitest"
import { encodedSummary, summaryData } from "../src/ports/WorkflowEvents.js"

describe("summaryData", () => {
  it("is the summary as the contract's schema encodes it, key order included", () => {
    const at = (ms: number) => DateTime.makeUnsafe(ms)
    const cases = [
      Fixtures.workflow(Fixtures.uuid()),
      Fixtures.workflow(Fixtures.uuid(), { status: "running", tags: ["a", "b"], started_at: at(1_700_000_000_123) }),
      Fixtures.workflow(Fixtures.uuid(), {
        status: "completed",
        name: "ünïcode \" name",
        created_at: at(0),
        updated_at: at(253_402_300_799_999),
        started_at: at(1),
        completed_at: at(2)
      }),
      Fixtures.workflow(Fixtures.uuid(), { status: "failed", completed_at: at(1_700_000_000_000) })
    ]
    for (const w of cases) {
      expect(summaryData(w)).toStrictEqual(encodedSummary(w))
      expect(JSON.stringify(summaryData(w))).toBe(JSON.stringify(encodedSummary(w)))
      // Again, with the timestamps' strings remembered.
      expect(JSON.stringify(summaryData(w))).toBe(JSON.stringify(encodedSummary(w)))
    }
  })
})
