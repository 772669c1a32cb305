/**
 * One workflow, live: the detail is fetched once, then its event stream (replayed from the start
 * for an unfinished workflow) drives the status timeline, queue position, node and step progress
 * and outputs. On `queued` the detail is fetched again (the runner's queue position), on `done` the
 * detail and outputs (error fields, final files). The events' workflow and output are decoded by
 * the declaration's schemas, like every answer of the API. It asks for live previews: the latest
 * one is shown while the workflow runs, and hidden when it ends.
 */
import { WorkflowOutputView, WorkflowSummary } from "@wes/core"
import * as Schema from "effect/Schema"
import { useEffect, useState } from "preact/hooks"
import { call } from "../api.js"
import { follow, type PreviewImage } from "../sse.js"
import { isFinished, type OutputData, type WorkflowDetailData } from "../types.js"
import { ErrorBox, StatusBadge, Tags, Time } from "../ui.js"
import { LivePreview } from "./LivePreview.js"
import { Outputs } from "./Outputs.js"
import { Progress, type ProgressState, Timeline, type TimelineEntry } from "./Progress.js"
import { Rerun } from "./Rerun.js"

const decodeSummary = Schema.decodeUnknownSync(WorkflowSummary)
const decodeOutput = Schema.decodeUnknownSync(WorkflowOutputView)

export const WorkflowDetailView = ({ id }: { readonly id: string }) => {
  const [workflow, setWorkflow] = useState<WorkflowDetailData | undefined>(undefined)
  const [outputs, setOutputs] = useState<ReadonlyArray<OutputData>>([])
  const [timeline, setTimeline] = useState<ReadonlyArray<TimelineEntry>>([])
  const [progress, setProgress] = useState<ProgressState>({ executed: [], node: undefined, value: 0, max: 0 })
  const [preview, setPreview] = useState<PreviewImage | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const [actionError, setActionError] = useState<unknown>(undefined)

  useEffect(() => {
    let stop = () => {}
    let live = true
    const refresh = () =>
      Promise.all([call((api) => api.workflows.get({ params: { id } })), call((api) => api.workflows.outputs({ params: { id } }))])
        .then(([w, o]) => {
          if (!live) return
          setWorkflow(w)
          setOutputs(o.outputs)
        }, (e: unknown) => live && setError(e))
    void refresh().then(() => {
      if (!live) return
      stop = follow(id, {
        after: 0,
        onError: setError,
        onPreview: setPreview,
        onEvent: (e) => {
          if (e.type === "status" || e.type === "done") {
            const s = decodeSummary(e.data)
            setWorkflow((w) => (w === undefined ? w : { ...w, ...s }))
            // Event 0 is the state on connect, ahead of the replay from event 1: not a step of the timeline.
            if (e.id > 0) setTimeline((t) => (t.at(-1)?.status === s.status ? t : [...t, { status: s.status, at: s.updated_at }]))
            if (e.type === "done") {
              setPreview(undefined)
              void refresh()
            }
            // The position the runner gave at queueing is in the detail; `queue` events report its changes.
            else if (s.status === "queued") void call((api) => api.workflows.get({ params: { id } })).then((w) => live && setWorkflow(w), (err: unknown) => live && setError(err))
          } else if (e.type === "queue") {
            const { queue_number } = e.data as { queue_number: number }
            setWorkflow((w) => (w === undefined ? w : { ...w, queue_number }))
          } else if (e.type === "executing") {
            const { node } = e.data as { node: string }
            setProgress((p) => ({ executed: p.node === undefined ? p.executed : [...p.executed, p.node], node, value: 0, max: 0 }))
          } else if (e.type === "progress") {
            const { node, value, max } = e.data as { node: string; value: number; max: number }
            setProgress((p) => ({ ...p, node, value, max }))
          } else if (e.type === "output") {
            const o = decodeOutput(e.data)
            setOutputs((os) => (os.some((x) => x.id === o.id) ? os : [...os, o]))
          }
        }
      })
    })
    return () => {
      live = false
      stop()
    }
  }, [id])

  if (workflow === undefined) return <section aria-label="Workflow"><h2>Workflow</h2>{error === undefined ? <p>Loading...</p> : <ErrorBox error={error} />}</section>
  const finished = isFinished(workflow.status)
  const cancel = async () => {
    setActionError(undefined)
    try {
      const s = await call((api) => api.workflows.cancel({ params: { id } }))
      setWorkflow({ ...workflow, ...s })
    } catch (e) {
      setActionError(e)
    }
  }
  const position = workflow.queue_position
  return (
    <section aria-label="Workflow">
      <p><a href="#/workflows">All workflows</a></p>
      <h2>{workflow.name} <StatusBadge status={workflow.status} /></h2>
      <ErrorBox error={error} />
      <dl class="facts">
        <dt>Id</dt><dd><code>{workflow.id}</code></dd>
        <dt>Tags</dt><dd><Tags tags={workflow.tags} /></dd>
        <dt>Created</dt><dd><Time at={workflow.created_at} /></dd>
        <dt>Started</dt><dd><Time at={workflow.started_at} /></dd>
        <dt>Finished</dt><dd><Time at={workflow.completed_at} /></dd>
        {position !== null && position !== undefined && <><dt>Queue position</dt><dd data-testid="queue-position">{position}</dd></>}
        {workflow.estimated_start_at !== null && <><dt>Estimated start</dt><dd><Time at={workflow.estimated_start_at} /></dd></>}
        <dt>Priority</dt><dd>{workflow.priority}</dd>
        {workflow.attempts.length > 0 && <><dt>Earlier attempts</dt><dd>{workflow.attempts.map((a) => `${a.exception_type} on ${a.runner_id}`).join("; ")}</dd></>}
        <dt>Runner</dt><dd><code>{workflow.user_runner_id ?? workflow.managed_runner_id ?? "-"}</code>{workflow.managed_runner_id !== null ? " (managed)" : ""}</dd>
      </dl>
      {!finished && <button type="button" class="danger" onClick={cancel}>Cancel workflow</button>}
      <ErrorBox error={actionError} />
      {(workflow.exception_type !== null || workflow.exception_message !== null) && (
        <div class="error" role="alert">
          <strong>{workflow.exception_type ?? "Error"}</strong>{workflow.error_node !== null && <> at node <code>{workflow.error_node}</code></>}
          <p>{workflow.exception_message}</p>
        </div>
      )}
      <h3>Progress</h3>
      <Progress workflow={workflow} progress={progress} />
      {!finished && <LivePreview preview={preview} />}
      <Timeline workflow={workflow} entries={timeline} />
      <h3>Outputs</h3>
      <Outputs workflowId={id} name={workflow.name} outputs={outputs} />
      <h3>Parameters</h3>
      {workflow.workflow_params.length === 0
        ? <p class="muted">None.</p>
        : <table><tbody>{workflow.workflow_params.map(([k, v]) => <tr key={k}><th scope="row"><code>{k}</code></th><td>{v}</td></tr>)}</tbody></table>}
      <details>
        <summary>Rerun with other parameters</summary>
        <Rerun workflow={workflow} finished={finished} />
      </details>
      <details>
        <summary>Definition (workflow_json)</summary>
        <pre>{JSON.stringify(workflow.workflow_json, null, 2)}</pre>
      </details>
    </section>
  )
}
