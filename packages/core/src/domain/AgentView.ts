/**
 * A runner's agent as its detail shows it (issue 34, item 5): whether its `wes-agent` is
 * connected, the machine's health it last reported (GPU, VRAM, disk), the models it placed, and
 * whether the runner takes work now and, when it does not, why. `null` on direct runners: WES
 * knows nothing of their machine beyond what ComfyUI's `/system_stats` says (`comfyui`).
 */
import * as DateTime from "effect/DateTime"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { NonNegativeInt, Timestamp } from "./Json.js"

/**
 * What `RunnerAgents.status` answers (the port's `AgentStatus`, where the agent is connected and
 * when it reported), as far as the view reads it.
 */
export interface ReportedAgentStatus {
  readonly agent_version: string
  readonly gpu: { readonly name: string; readonly vram_total_bytes: number | null; readonly vram_free_bytes: number | null } | null
  readonly disk: { readonly free_bytes: number; readonly total_bytes: number } | null
  readonly models: ReadonlyArray<{ readonly bytes: number }>
  readonly model_budget_bytes: number | null
  readonly cleanup: boolean
  readonly connected: boolean
  readonly reported_at: string
}

/** A byte count (the agent's figures, rounded to whole bytes). */
const Bytes = NonNegativeInt

export const RunnerAgentView = Schema.Struct({
  connected: Schema.Boolean.annotate({ description: "Whether the runner's wes-agent holds a connection to WES now" }),
  reported_at: Schema.NullOr(Timestamp).annotate({ description: "When the agent last reported its status; null: never" }),
  agent_version: Schema.NullOr(Schema.String),
  gpu: Schema.NullOr(Schema.Struct({
    name: Schema.String,
    vram_total_bytes: Schema.NullOr(Bytes),
    vram_free_bytes: Schema.NullOr(Bytes)
  })),
  disk: Schema.NullOr(Schema.Struct({ free_bytes: Bytes, total_bytes: Bytes })).annotate({
    description: "Free and total bytes of the disk holding ComfyUI's folders"
  }),
  models: Schema.Struct({ count: NonNegativeInt, bytes: Bytes }).annotate({
    description: "The model files the agent placed (WES-managed, evictable): how many, and their bytes"
  }),
  model_budget_bytes: Schema.NullOr(Bytes).annotate({ description: "The agent's disk budget for placed models; null: unbounded" }),
  cleanup: Schema.NullOr(Schema.Boolean).annotate({
    description: "Whether the agent deletes a run's files from ComfyUI's folders once WES holds its outputs; null: not reported yet"
  }),
  claiming: Schema.Boolean.annotate({ description: "Whether the runner takes work now" }),
  reason: Schema.NullOr(Schema.String).annotate({ description: "Why it does not take work (null while it does)" })
}).annotate({
  identifier: "RunnerAgent",
  description: "A runner's wes-agent and the health it reports (the runner's `agent`: null for a runner WES reaches directly)"
})
export interface RunnerAgentView extends Schema.Schema.Type<typeof RunnerAgentView> {}

/** A byte count as the view shows it: whole, never negative (null stays null). */
const bytes = <N extends number | null>(n: N): N => (n === null ? n : Math.max(0, Math.round(n)) as N)

/** A report's `reported_at` as a timestamp (null when it is not one). */
const reportedAt = (at: string): DateTime.Utc | null => Option.getOrNull(DateTime.make(at))

/**
 * The view of an agent runner's agent from its latest report (none: it never connected) and the
 * reason it does not claim work (null: it does).
 */
export const agentView = (status: Option.Option<ReportedAgentStatus>, reason: string | null): RunnerAgentView => {
  const base = { claiming: reason === null, reason }
  if (Option.isNone(status)) {
    return {
      connected: false,
      reported_at: null,
      agent_version: null,
      gpu: null,
      disk: null,
      models: { count: 0, bytes: 0 },
      model_budget_bytes: null,
      cleanup: null,
      ...base
    }
  }
  const s = status.value
  return {
    connected: s.connected,
    reported_at: reportedAt(s.reported_at),
    agent_version: s.agent_version,
    gpu: s.gpu === null ? null : { name: s.gpu.name, vram_total_bytes: bytes(s.gpu.vram_total_bytes), vram_free_bytes: bytes(s.gpu.vram_free_bytes) },
    disk: s.disk === null ? null : { free_bytes: bytes(s.disk.free_bytes), total_bytes: bytes(s.disk.total_bytes) },
    models: { count: s.models.length, bytes: bytes(s.models.reduce((sum, m) => sum + m.bytes, 0)) },
    model_budget_bytes: bytes(s.model_budget_bytes),
    cleanup: s.cleanup,
    ...base
  }
}
