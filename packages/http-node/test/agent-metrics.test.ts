/**
 * Issue 34, item 5: an agent runner's health at `GET /metrics`, as the Prometheus text lines the
 * route writes (effect's PrometheusMetrics over the process's registry; one registry per
 * instance here): set from the reports of an agent connected to the instance, gone from it when
 * the agent disconnects, so two instances never both show a runner.
 */
import type { AgentStatus } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as PrometheusMetrics from "effect/observability/PrometheusMetrics"
import { describe, expect, it } from "vitest"
import { forgetAgent, observeAgentConnected, observeAgentStatus } from "../src/AgentMetrics.js"
import { seriesValue } from "./prometheus.js"

const GiB = 1024 ** 3
const RUNNER = "0192f5a0-0000-7000-8000-000000000001"

const status: AgentStatus = {
  agent_version: "0.1.0",
  gpu: { name: "NVIDIA GeForce RTX 4090", vram_total_bytes: 24 * GiB, vram_free_bytes: 20 * GiB },
  disk: { free_bytes: 200 * GiB, total_bytes: 1000 * GiB },
  models: [
    { folder: "checkpoints", filename: "sdxl.safetensors", sha256: "a".repeat(64), bytes: 6 * GiB },
    { folder: "loras", filename: "detail.safetensors", sha256: "b".repeat(64), bytes: GiB }
  ],
  model_budget_bytes: null,
  cleanup: true
}

/** An instance's registry, and the text its `/metrics` would answer. */
const instance = () => {
  const registry: Metric.MetricRegistry = new Map()
  const run = <A>(effect: Effect.Effect<A>) => Effect.runSync(Effect.provideService(effect, Metric.MetricRegistry, registry))
  return { run, scrape: () => run(PrometheusMetrics.format()) }
}

const labels = { runner_id: RUNNER, runner_kind: "user" }
const health = (text: string) => ({
  connected: seriesValue(text, "wes_runner_agent_connected", labels),
  vram_free: seriesValue(text, "wes_runner_vram_free_bytes", labels),
  vram_total: seriesValue(text, "wes_runner_vram_total_bytes", labels),
  disk_free: seriesValue(text, "wes_runner_disk_free_bytes", labels),
  disk_total: seriesValue(text, "wes_runner_disk_total_bytes", labels),
  models: seriesValue(text, "wes_runner_models_bytes", labels)
})

describe("agent runner gauges", () => {
  it("shows the last report of an agent connected here, by runner, as gauges", () => {
    const a = instance()
    a.run(observeAgentConnected(RUNNER))
    expect(health(a.scrape())).toEqual({ connected: 1, vram_free: undefined, vram_total: undefined, disk_free: undefined, disk_total: undefined, models: undefined })
    a.run(observeAgentStatus(RUNNER, status))
    const text = a.scrape()
    expect(health(text)).toEqual({ connected: 1, vram_free: 20 * GiB, vram_total: 24 * GiB, disk_free: 200 * GiB, disk_total: 1000 * GiB, models: 7 * GiB })
    expect(text).toMatch(/^# TYPE wes_runner_vram_free_bytes gauge$/m)
    expect(text).toMatch(/^# HELP wes_runner_disk_free_bytes /m)
    // A new report replaces the figures; a GPU no longer reported takes its series with it.
    a.run(observeAgentStatus(RUNNER, { ...status, gpu: null, disk: { free_bytes: GiB, total_bytes: 1000 * GiB } }))
    expect(health(a.scrape())).toMatchObject({ connected: 1, vram_free: undefined, vram_total: undefined, disk_free: GiB })
  })

  it("moves with the agent: the instance it left shows nothing of it, the one it joined shows it", () => {
    const a = instance()
    const b = instance()
    a.run(observeAgentStatus(RUNNER, status))
    // The agent reconnects to b: a's connection ended.
    a.run(forgetAgent(RUNNER))
    b.run(observeAgentStatus(RUNNER, { ...status, disk: { free_bytes: 150 * GiB, total_bytes: 1000 * GiB } }))
    expect(a.scrape()).not.toContain(RUNNER)
    expect(health(b.scrape())).toMatchObject({ connected: 1, disk_free: 150 * GiB })
  })
})
