/**
 * A prompt's overall progress as one percentage, from what a runner says while it runs: which
 * nodes are cached (`execution_cached`), which started and finished (`progress_state`, or on
 * servers older than 0.3.45 the sequence of `executing`), and the steps of the node running now
 * (`progress`). The workflow's `executing` and `progress` events carry it, so a client draws a
 * real bar instead of guessing.
 *
 *   percent = floor(100 × (finished + Σ step fraction of running nodes) / (graph nodes − cached))
 *
 * Pure: the driver keeps one value per running prompt and feeds it the runner's events.
 */
import type { RunnerEvent } from "../ports/RunnerGateway.js"

export interface PromptProgress {
  /** The graph's node ids: only these count (expanded sub-nodes such as "12:5" do not). */
  readonly nodes: ReadonlySet<string>
  /** Nodes whose outputs the runner had cached: they do not run and do not count. */
  readonly cached: ReadonlySet<string>
  readonly finished: ReadonlySet<string>
  /** Nodes started and not finished, with their step fraction (0 to 1). */
  readonly running: ReadonlyMap<string, number>
  /** Whether the runner sends `progress_state`: node states then come from it alone. */
  readonly detailed: boolean
}

/** Nothing done yet, for a graph with these node ids. */
export const startProgress = (nodeIds: Iterable<string>): PromptProgress => ({
  nodes: new Set(nodeIds),
  cached: new Set(),
  finished: new Set(),
  running: new Map(),
  detailed: false
})

const fraction = (value: number, max: number): number =>
  max > 0 && Number.isFinite(value) ? Math.min(1, Math.max(0, value / max)) : 0

const finish = (p: PromptProgress, node: string): PromptProgress => {
  if (!p.nodes.has(node) || p.finished.has(node)) return p
  const running = new Map(p.running)
  running.delete(node)
  return { ...p, finished: new Set([...p.finished, node]), running }
}

const run = (p: PromptProgress, node: string, at: number): PromptProgress => {
  if (!p.nodes.has(node) || p.finished.has(node)) return p
  return { ...p, running: new Map([...p.running, [node, at]]) }
}

/** The progress after one runner event of this prompt (events of other kinds change nothing). */
export const advanceProgress = (p: PromptProgress, event: RunnerEvent): PromptProgress => {
  switch (event._tag) {
    case "ExecutionCached":
      return { ...p, cached: new Set(event.nodes.filter((n) => p.nodes.has(n))) }
    case "ProgressState": {
      // Cumulative: every started node is listed, so this alone restores the state (after a takeover too).
      let next: PromptProgress = { ...p, detailed: true }
      for (const n of event.nodes) {
        if (n.state === "finished" || n.state === "error") next = finish(next, n.node)
        else if (n.state === "running") next = run(next, n.node, fraction(n.value, n.max))
      }
      return next
    }
    case "Executing": {
      if (p.detailed) return run(p, event.node, p.running.get(event.node) ?? 0)
      // Without progress_state, nodes run one after another: a node starting ends the one before.
      let next = p
      for (const other of p.running.keys()) if (other !== event.node) next = finish(next, other)
      return run(next, event.node, next.running.get(event.node) ?? 0)
    }
    case "Progress":
      return event.node === null ? p : run(p, event.node, fraction(event.value, event.max))
    case "Executed":
      return finish(p, event.node)
    default:
      return p
  }
}

/** The overall percentage, 0 to 100, rounded down (100 only once every node to run has finished). */
export const progressPercent = (p: PromptProgress): number => {
  let toRun = 0
  let done = 0
  for (const node of p.nodes) {
    if (p.cached.has(node)) continue
    toRun++
    if (p.finished.has(node)) done++
    else done += p.running.get(node) ?? 0
  }
  if (toRun === 0) return 100
  return Math.min(100, Math.floor((100 * done) / toRun + 1e-9))
}
