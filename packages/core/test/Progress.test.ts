/**
 * The overall percentage of a prompt from the runner's events: the sequences are the ones a real
 * ComfyUI 0.3.64 sends (runner-client/test/recordings), an older server without `progress_state`,
 * and a takeover that starts listening in the middle of a run.
 */
import { type RunnerEvent } from "@wes/core"
import { advanceProgress, type PromptProgress, progressPercent, startProgress } from "../src/dispatch/Progress.js"
import { type NodeProgressState } from "../src/ports/RunnerGateway.js"
import { describe, expect, it } from "vitest"

const P = "prompt-1"
const states = (nodes: Record<string, readonly [NodeProgressState["state"], number, number]>): RunnerEvent => ({
  _tag: "ProgressState",
  prompt_id: P,
  nodes: Object.entries(nodes).map(([node, [state, value, max]]) => ({ node, state, value, max }))
})
const executing = (node: string): RunnerEvent => ({ _tag: "Executing", prompt_id: P, node })
const step = (node: string, value: number, max: number): RunnerEvent => ({ _tag: "Progress", prompt_id: P, node, value, max })
const cached = (...nodes: Array<string>): RunnerEvent => ({ _tag: "ExecutionCached", prompt_id: P, nodes })
const executed = (node: string): RunnerEvent => ({ _tag: "Executed", prompt_id: P, node, output: null })

/** The percentage after each event. */
const trace = (nodes: Array<string>, events: Array<RunnerEvent>): Array<number> => {
  let p: PromptProgress = startProgress(nodes)
  return events.map((e) => {
    p = advanceProgress(p, e)
    return progressPercent(p)
  })
}

describe("overall progress", () => {
  it("counts finished nodes out of the graph's nodes, from progress_state as ComfyUI 0.3.64 sends it", () => {
    // EmptyImage -> ImageInvert -> SaveImage, as recorded.
    expect(trace(["1", "2", "3"], [
      cached(),
      states({ "1": ["running", 0, 1] }),
      executing("1"),
      states({ "1": ["finished", 1, 1] }),
      states({ "1": ["finished", 1, 1], "2": ["running", 0, 1] }),
      executing("2"),
      states({ "1": ["finished", 1, 1], "2": ["finished", 1, 1] }),
      states({ "1": ["finished", 1, 1], "2": ["finished", 1, 1], "3": ["running", 0, 1] }),
      executing("3"),
      executed("3"),
      states({ "1": ["finished", 1, 1], "2": ["finished", 1, 1], "3": ["finished", 1, 1] })
    ])).toEqual([0, 0, 0, 33, 33, 33, 66, 66, 66, 100, 100])
  })

  it("refines the running node with its steps", () => {
    expect(trace(["1", "2"], [
      states({ "1": ["finished", 1, 1], "2": ["running", 0, 1] }),
      step("2", 5, 20),
      states({ "1": ["finished", 1, 1], "2": ["running", 10, 20] }),
      step("2", 20, 20)
    ])).toEqual([50, 62, 75, 100])
  })

  it("leaves cached nodes out of the nodes to run", () => {
    // A re-run where EmptyImage and ImageInvert come from the cache: only SaveImage runs.
    expect(trace(["1", "2", "3"], [
      cached("1", "2"),
      states({ "1": ["finished", 1, 1], "2": ["finished", 1, 1], "3": ["running", 0, 1] }),
      executing("3")
    ])).toEqual([0, 0, 0])
    expect(trace(["1", "2", "3"], [cached("1", "2", "3"), executed("3")])).toEqual([100, 100])
  })

  it("infers finished nodes from executing on servers without progress_state", () => {
    expect(trace(["1", "2", "3", "4"], [
      executing("1"),
      executing("2"),
      step("2", 1, 2),
      executing("3"),
      executed("3"),
      executing("4")
    ])).toEqual([0, 25, 37, 50, 75, 75])
  })

  it("does not end nodes on executing once progress_state is known (nodes may run side by side)", () => {
    expect(trace(["1", "2", "3"], [
      states({ "1": ["running", 0, 1] }),
      executing("1"),
      states({ "1": ["running", 0, 1], "2": ["running", 0, 1] }),
      executing("2"),
      states({ "1": ["finished", 1, 1], "2": ["running", 1, 2] })
    ])).toEqual([0, 0, 0, 0, 50])
  })

  it("restores everything from the first progress_state seen in the middle of a run (a takeover)", () => {
    expect(trace(["1", "2", "3", "4"], [
      states({ "1": ["finished", 1, 1], "2": ["finished", 1, 1], "3": ["running", 1, 4] })
    ])).toEqual([56])
  })

  it("ignores nodes that are not in the graph and steps without a node", () => {
    expect(trace(["1", "2"], [
      states({ "1:5": ["finished", 1, 1], "1": ["running", 0, 1] }),
      step("9", 1, 1),
      { _tag: "Progress", prompt_id: P, node: null, value: 1, max: 1 },
      executed("9")
    ])).toEqual([0, 0, 0, 0])
  })

  it("never exceeds 100 or goes below 0 on odd step values", () => {
    expect(trace(["1"], [step("1", 7, 5)])).toEqual([100])
    expect(trace(["1"], [step("1", -3, 5)])).toEqual([0])
    expect(trace(["1"], [step("1", 3, 0)])).toEqual([0])
  })
})
