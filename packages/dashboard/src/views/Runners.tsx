/**
 * Runners: list with status, ComfyUI version (and what WES warns about it), tags and work in
 * flight (counted in each runner's recent history, the 10 newest workflows: "10+" when all of
 * them are unfinished), create, disable or enable, delete (asked twice), and the recent history of one.
 * An agent runner also shows its agent's health and, when it takes no work, why (AgentHealth.tsx).
 */
import { AGENT_ENDPOINT } from "@wes/core"
import { useState } from "preact/hooks"
import { call } from "../api.js"
import { isFinished, type RunnerData, type WorkflowSummaryData } from "../types.js"
import { ErrorBox, Pager, Section, StatusBadge, Tags, Time, useLoad } from "../ui.js"
import { AgentFacts, AgentReason } from "./AgentHealth.js"
import { ManagedRunners } from "./ManagedRunners.js"
import { RunnerForm } from "./RunnerForm.js"

const PER_PAGE = 10

/** The version and devices the probe found, or that it has not probed the runner yet. */
const ComfyUI = ({ comfyui }: { readonly comfyui: RunnerData["comfyui"] }) =>
  comfyui === null
    ? <span class="muted">not probed yet</span>
    : <>{comfyui.version ?? "version unknown"}{comfyui.devices.length > 0 && <span class="muted"> on {comfyui.devices.map((d) => d.name).join(", ")}</span>}</>

/** Where WES reaches it: its endpoint, or its agent (an endpoint given to an agent runner is only a label). */
const Endpoint = ({ runner }: { readonly runner: RunnerData }) =>
  runner.agent === null
    ? <code>{runner.endpoint}</code>
    : <>through its wes-agent{runner.endpoint !== AGENT_ENDPOINT && <span class="muted"> (<code>{runner.endpoint}</code>, not connected to)</span>}</>

interface Row {
  readonly runner: RunnerData
  readonly history: ReadonlyArray<WorkflowSummaryData>
}

const load = async (page: number) => {
  const { runners, total } = await call((api) => api.runners.list({ query: { page, per_page: PER_PAGE } }))
  const rows = await Promise.all(runners.map(async (runner): Promise<Row> => ({
    runner,
    history: await call((api) => api.runners.history({ params: { id: runner.id } }))
  })))
  return { rows, total }
}

export const Runners = () => {
  const [page, setPage] = useState(1)
  const list = useLoad(() => load(page), `${page}`)
  const [confirming, setConfirming] = useState<string | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const act = async (f: () => Promise<unknown>) => {
    setError(undefined)
    try {
      await f()
      setConfirming(undefined)
      list.reload()
    } catch (e) {
      setError(e)
    }
  }
  const rows = list.data?.rows ?? []
  return (
    <Section title="Runners">
      <ErrorBox error={list.error} />
      <ErrorBox error={error} />
      {list.data !== undefined && rows.length === 0 && <p>No runners of your own yet.</p>}
      {rows.map(({ history, runner }) => {
        const inFlight = history.filter((w) => !isFinished(w.status)).length
        return (
          <article class="card runner" key={runner.id} aria-label={`Runner ${runner.name}`}>
            <h3>{runner.name} <StatusBadge status={runner.status} /></h3>
            {runner.warning !== null && <p class="warning" role="note">{runner.warning}</p>}
            <AgentReason agent={runner.agent} />
            <dl class="facts">
              <dt>Endpoint</dt><dd><Endpoint runner={runner} /></dd>
              <dt>ComfyUI</dt><dd><ComfyUI comfyui={runner.comfyui} /></dd>
              {runner.agent !== null && <AgentFacts agent={runner.agent} />}
              <dt>Tags</dt><dd><Tags tags={runner.tags} /></dd>
              <dt>In flight</dt><dd>{inFlight === 10 ? "10+" : inFlight}</dd>
              <dt>Headers</dt><dd>{Object.keys(runner.headers).join(", ") || <span class="muted">none</span>}</dd>
            </dl>
            <div class="actions">
              <button type="button" onClick={() => void act(() => call((api) => api.runners.update({ params: { id: runner.id }, payload: { status: runner.status === "active" ? "disabled" : "active" } })))}>
                {runner.status === "active" ? "Disable" : "Enable"} {runner.name}
              </button>
              {confirming === runner.id
                ? <button type="button" class="danger" onClick={() => void act(() => call((api) => api.runners.delete({ params: { id: runner.id } })))}>Confirm delete {runner.name}</button>
                : <button type="button" onClick={() => setConfirming(runner.id)}>Delete {runner.name}</button>}
            </div>
            <details>
              <summary>Recent history ({history.length})</summary>
              <ul>{history.map((w) => <li key={w.id}><a href={`#/workflows/${w.id}`}>{w.name}</a> <StatusBadge status={w.status} /> <Time at={w.created_at} /></li>)}</ul>
            </details>
          </article>
        )
      })}
      {list.data !== undefined && <Pager page={page} perPage={PER_PAGE} total={list.data.total} onPage={setPage} />}
      <RunnerForm onCreated={list.reload} />
      <ManagedRunners />
    </Section>
  )
}
