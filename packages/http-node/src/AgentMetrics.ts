/**
 * The health of agent runners at `GET /metrics` (issue 34, item 5): per runner whose `wes-agent`
 * is connected to THIS instance, gauges from its latest status report: connected, VRAM free and
 * total, disk free and total, bytes of placed models. Labelled like `wes_runner_in_flight`
 * (`runner_id`, `runner_kind`). The instance holding an agent's connection sets them at every
 * report and removes them when the connection ends, so each runner has its series on one
 * instance at a time: summed over instances (`sum by (runner_id)`), a runner is counted once,
 * and an agent that disconnected has no series left anywhere (not a stale last value).
 */
import type { AgentStatus } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"

const connected = Metric.gauge("wes_runner_agent_connected", {
  description: "1 while the runner's wes-agent is connected to this instance (series only on that instance), by runner"
})
const vramFree = Metric.gauge("wes_runner_vram_free_bytes", { description: "Free VRAM of the agent runner's GPU, as its agent last reported, by runner" })
const vramTotal = Metric.gauge("wes_runner_vram_total_bytes", { description: "Total VRAM of the agent runner's GPU, as its agent last reported, by runner" })
const diskFree = Metric.gauge("wes_runner_disk_free_bytes", {
  description: "Free bytes of the disk holding the agent runner's ComfyUI folders, as its agent last reported, by runner"
})
const diskTotal = Metric.gauge("wes_runner_disk_total_bytes", {
  description: "Size of the disk holding the agent runner's ComfyUI folders, as its agent last reported, by runner"
})
const modelsBytes = Metric.gauge("wes_runner_models_bytes", {
  description: "Bytes of the model files the runner's agent placed (WES-managed, evictable), by runner"
})

const ALL = [connected, vramFree, vramTotal, diskFree, diskTotal, modelsBytes] as const

const series = (runnerId: string) => {
  const labels = { runner_kind: "user", runner_id: runnerId }
  return (gauge: Metric.Gauge<number>) => Metric.withAttributes(gauge, labels)
}

/** Sets the value, or removes the series when the agent did not report it (no GPU, unknown VRAM). */
const setOrRemove = (gauge: Metric.Metric<number, unknown>, value: number | null | undefined): Effect.Effect<void> =>
  value === null || value === undefined ? Metric.remove(gauge) : Metric.update(gauge, value)

/** `runnerId`'s gauges from a status its agent, connected to this instance, just reported. */
export const observeAgentStatus = (runnerId: string, status: AgentStatus): Effect.Effect<void> => {
  const of = series(runnerId)
  return Effect.all([
    Metric.update(of(connected), 1),
    setOrRemove(of(vramFree), status.gpu?.vram_free_bytes),
    setOrRemove(of(vramTotal), status.gpu?.vram_total_bytes),
    setOrRemove(of(diskFree), status.disk?.free_bytes),
    setOrRemove(of(diskTotal), status.disk?.total_bytes),
    Metric.update(of(modelsBytes), status.models.reduce((sum, m) => sum + m.bytes, 0))
  ], { discard: true })
}

/** `runnerId`'s agent connected to this instance, before its first report: only `connected`. */
export const observeAgentConnected = (runnerId: string): Effect.Effect<void> => Metric.update(series(runnerId)(connected), 1)

/** `runnerId`'s agent is no longer connected to this instance: its series go (another instance may hold them now). */
export const forgetAgent = (runnerId: string): Effect.Effect<void> => {
  const of = series(runnerId)
  return Effect.forEach(ALL, (gauge) => Metric.remove(of(gauge)), { discard: true })
}
