/** The progress bar (nodes done of the definition's nodes, and the current node's steps) and the status timeline. */
import type * as DateTime from "effect/DateTime"
import type { WorkflowDetailData } from "../types.js"
import { StatusBadge, Time } from "../ui.js"

export interface ProgressState {
  /** Nodes the runner finished (in the order it started them). */
  readonly executed: ReadonlyArray<string>
  readonly node: string | undefined
  readonly value: number
  readonly max: number
}

export interface TimelineEntry {
  readonly status: string
  readonly at: DateTime.Utc
}

export const Progress = ({ workflow, progress }: { readonly workflow: WorkflowDetailData; readonly progress: ProgressState }) => {
  const nodes = Math.max(1, Object.keys(workflow.workflow_json).length)
  const done = workflow.status === "completed"
  const fraction = done ? 1 : Math.min(1, (progress.executed.length + (progress.max > 0 ? progress.value / progress.max : 0)) / nodes)
  const label = done
    ? "Completed"
    : progress.node === undefined
    ? `Waiting (${workflow.status})`
    : `Node ${progress.node}${progress.max > 0 ? `: step ${progress.value} of ${progress.max}` : ""}`
  return (
    <div class="progress">
      <progress id="wf-progress" max={100} value={Math.round(fraction * 100)} aria-label="Workflow progress" />
      <span data-testid="progress-label">{label}</span>
    </div>
  )
}

export const Timeline = ({ workflow, entries }: { readonly workflow: WorkflowDetailData; readonly entries: ReadonlyArray<TimelineEntry> }) => {
  // A finished workflow's stream carries only its last state: its timestamps tell the rest.
  const shown: ReadonlyArray<TimelineEntry> = entries.length > 1 ? entries : [
    { status: "created", at: workflow.created_at },
    ...(workflow.started_at !== null ? [{ status: "running", at: workflow.started_at }] : []),
    ...(workflow.completed_at !== null ? [{ status: workflow.status, at: workflow.completed_at }] : [])
  ]
  return (
    <ol class="timeline" aria-label="Status timeline">
      {shown.map((e, i) => <li key={i}><StatusBadge status={e.status} /> <Time at={e.at} /></li>)}
    </ol>
  )
}
