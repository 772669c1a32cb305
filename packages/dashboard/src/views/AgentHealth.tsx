/**
 * An agent runner's health on its card (issue 34, items 4 and 5): whether its `wes-agent` is
 * connected, its GPU and VRAM, its disk, the models it placed, and, when the runner takes no
 * work, why (the server's own sentence: "Not taking work: 1.2 GB free disk, below 5 GB").
 * Sizes are written as the server writes them in that sentence (`diskText` of the core).
 */
import { diskText } from "@wes/core"
import type { RunnerData } from "../types.js"
import { StatusBadge, Time } from "../ui.js"

type Agent = NonNullable<RunnerData["agent"]>

/** "20 GB free of 24 GB", or what is not known. */
const freeOf = (free: number | null, total: number | null): string =>
  free === null && total === null
    ? "not reported"
    : `${free === null ? "?" : diskText(free)} free of ${total === null ? "?" : diskText(total)}`

/** Why the runner takes no work, above its facts; nothing while it takes work. */
export const AgentReason = ({ agent }: { readonly agent: RunnerData["agent"] }) =>
  agent === null || agent.claiming || agent.reason === null ? null : <p class="warning" role="note">{agent.reason}</p>

/** The agent's facts, as rows of the card's list. */
export const AgentFacts = ({ agent }: { readonly agent: Agent }) => (
  <>
    <dt>Agent</dt>
    <dd>
      <StatusBadge status={agent.connected ? "connected" : "disconnected"} />
      {agent.agent_version !== null && <span class="muted"> wes-agent {agent.agent_version}</span>}
      {agent.reported_at !== null && <span class="muted">, reported <Time at={agent.reported_at} /></span>}
    </dd>
    <dt>GPU</dt>
    <dd>
      {agent.gpu === null
        ? <span class="muted">none reported</span>
        : <>{agent.gpu.name}<span class="muted">, VRAM {freeOf(agent.gpu.vram_free_bytes, agent.gpu.vram_total_bytes)}</span></>}
    </dd>
    <dt>Disk</dt>
    <dd>{agent.disk === null ? <span class="muted">not reported</span> : freeOf(agent.disk.free_bytes, agent.disk.total_bytes)}</dd>
    <dt>Models</dt>
    <dd>
      {agent.models.count} placed, {diskText(agent.models.bytes)}
      <span class="muted">{agent.model_budget_bytes === null ? " (no budget)" : ` of a ${diskText(agent.model_budget_bytes)} budget`}</span>
      {agent.cleanup === false && <span class="muted">; cleanup off</span>}
    </dd>
  </>
)
