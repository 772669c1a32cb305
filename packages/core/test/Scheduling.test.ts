import { type RunnerTarget } from "@wes/core"
import { comfyUIWarning, versionSupport } from "../src/domain/ComfyUIVersion.js"
import { eligibleRunners, managedRunnerServes, pickRunner } from "../src/domain/Scheduling.js"
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

  it("leaves out a runner found below ComfyUI 0.3.45 (downgraded since it was registered); unknown versions stay eligible", () => {
    const on = (id: string, version: string | null) => ({ ...runner(id), comfyui: { version, devices: [], jobs_api: false } })
    const rs = [on("old", "0.3.44"), on("first", "0.3.45"), on("unsaid", null), runner("unprobed"), on("odd", "nightly"), on("new", "0.38.1")]
    expect(eligibleRunners(rs, []).map((r) => r.id)).toEqual(["first", "unsaid", "unprobed", "odd", "new"])
  })

  it("reads ComfyUI versions by their numbers: below 0.3.45 unsupported, 0.3.45-0.3.56 with the cancel race, later supported", () => {
    const cases = ["0.3.44", "v0.3.10", "0.2.7", "0.3.45", "0.3.56", "0.3.57", "0.3.64", "0.4.0", "0.38.1", "1.0", "0.3.60-dev+g1234", "", "nightly"]
    expect(cases.map(versionSupport)).toEqual([
      "unsupported", "unsupported", "unsupported", "cancel_race", "cancel_race", "supported", "supported", "supported", "supported",
      "supported", "supported", "unknown", "unknown"
    ])
    expect(comfyUIWarning({ version: "0.3.50", devices: [], jobs_api: false })).toContain("Upgrade to 0.3.57 or later")
    expect(comfyUIWarning({ version: "0.3.64", devices: [], jobs_api: false })).toBeNull()
    expect(comfyUIWarning(null)).toBeNull()
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
