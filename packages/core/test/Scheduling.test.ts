import { eligibleRunners, managedRunnerServes, pickRunner, type RunnerTarget } from "@wes/core"
import { describe, expect, it } from "vitest"

const runner = (id: string, tags: Array<string> = [], status: "active" | "disabled" = "active"): RunnerTarget => ({
  kind: "user",
  id,
  name: id,
  endpoint: "http://127.0.0.1:8188",
  headers: {},
  tags,
  status
})

describe("scheduling", () => {
  it("keeps only active runners whose tags cover the workflow's", () => {
    const rs = [runner("a", ["gpu", "xl"]), runner("b", ["gpu"]), runner("c", ["gpu", "xl"], "disabled"), runner("d")]
    expect(eligibleRunners(rs, ["gpu", "xl"]).map((r) => r.id)).toEqual(["a"])
    expect(eligibleRunners(rs, []).map((r) => r.id)).toEqual(["a", "b", "d"])
  })

  it("picks the runner with the least work in flight", () => {
    const rs = [runner("a"), runner("b"), runner("c")]
    expect(pickRunner(rs, new Map([["a", 3], ["b", 1], ["c", 2]]), 0)?.id).toBe("b")
    expect(pickRunner(rs, new Map([["a", 3], ["c", 2]]), 0)?.id).toBe("b")
  })

  it("spreads ties round robin as the cursor advances", () => {
    const rs = [runner("c"), runner("a"), runner("b")]
    const load = new Map([["a", 1], ["b", 1], ["c", 1]])
    expect([0, 1, 2, 3, 4].map((cursor) => pickRunner(rs, load, cursor)?.id)).toEqual(["a", "b", "c", "a", "b"])
  })

  it("has no pick without candidates", () => {
    expect(pickRunner([], new Map(), 0)).toBeUndefined()
  })

  it("serves pro runners to pro and plus, plus runners to plus only, nothing to free", () => {
    expect([managedRunnerServes("pro", "free"), managedRunnerServes("pro", "pro"), managedRunnerServes("pro", "plus")]).toEqual([false, true, true])
    expect([managedRunnerServes("plus", "free"), managedRunnerServes("plus", "pro"), managedRunnerServes("plus", "plus")]).toEqual([false, false, true])
  })
})
