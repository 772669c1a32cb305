/**
 * Issue 34, items 4 and 5: an agent runner's detail and list show its agent's health (connected or
 * not, GPU, VRAM, disk, placed models) and, when it takes no work, why; a direct runner shows
 * `agent: null`. The agents' statuses come from a test `RunnerAgents`.
 */
import { it } from "@effect/vitest"
import {
  AgentMinFreeDisk,
  type AgentStatus,
  claimBlockedReason,
  diskText,
  PlatformLive,
  RunnerAgents,
  RunnerGateway,
  RunnerProbe,
  RunnerService,
  TierPolicy,
  useCasesLayer
} from "@wes/core"
import { MemoryStoreLive } from "@wes/storage-memory"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { describe, expect } from "vitest"
import { makeTestGateway, newUser } from "./harness.js"

const GiB = 1024 ** 3

/** What `RunnerAgents.status` answers. */
type ReportedAgentStatus = AgentStatus & { readonly connected: boolean; readonly reported_at: string }

/** What a connected agent on a 24 GB GPU with plenty of disk reports. */
const healthy: ReportedAgentStatus = {
  agent_version: "0.1.0",
  gpu: { name: "NVIDIA GeForce RTX 4090", vram_total_bytes: 24 * GiB, vram_free_bytes: 20 * GiB },
  disk: { free_bytes: 200 * GiB, total_bytes: 1000 * GiB },
  models: [
    { folder: "checkpoints", filename: "sdxl.safetensors", sha256: "a".repeat(64), bytes: 6 * GiB },
    { folder: "loras", filename: "detail.safetensors", sha256: "b".repeat(64), bytes: 0.5 * GiB }
  ],
  model_budget_bytes: 100 * GiB,
  cleanup: true,
  connected: true,
  reported_at: "2026-11-28T17:00:00.000Z"
}

/** The use cases over a memory store, with agents reporting `statuses` (none: no RunnerAgents at all). */
const layerWith = (statuses: Map<string, ReportedAgentStatus> | undefined, minFreeDisk?: number) => {
  const gateway = Layer.succeed(RunnerGateway, makeTestGateway({ probes: [], cancels: [] }))
  const agents = statuses === undefined
    ? Layer.empty
    : Layer.succeed(RunnerAgents, RunnerAgents.of({
      connected: (id) => statuses.get(id)?.connected ?? false,
      status: (id) => Effect.sync(() => Option.fromNullishOr(statuses.get(id))),
      provision: () => Effect.die(new Error("unexpected provision")),
      cleanup: () => Effect.die(new Error("unexpected cleanup"))
    }))
  const threshold = minFreeDisk === undefined ? Layer.empty : Layer.succeed(AgentMinFreeDisk, minFreeDisk)
  return useCasesLayer().pipe(Layer.provideMerge(Layer.mergeAll(
    MemoryStoreLive,
    gateway,
    RunnerProbe.layer().pipe(Layer.provide(gateway)),
    TierPolicy.layer({}),
    PlatformLive,
    agents,
    threshold
  )))
}

const createBoth = Effect.gen(function*() {
  const user = yield* newUser("pro")
  const runners = yield* RunnerService
  const direct = yield* runners.create(user, { name: "direct", endpoint: "http://127.0.0.1:8188" })
  const agent = yield* runners.create(user, { name: "home-gpu", connection: "agent" })
  return { user, runners, direct, agent }
})

describe("an agent runner's health in its detail and the list", () => {
  const statuses = new Map<string, ReportedAgentStatus>()

  it.effect("shows a connected agent's GPU, VRAM, disk and placed models, taking work; a direct runner has agent null", () =>
    Effect.gen(function*() {
      const { agent, direct, runners, user } = yield* createBoth
      // Created before its agent ever connected.
      expect(agent.agent).toMatchObject({ connected: false, reported_at: null, gpu: null, claiming: false, reason: "Not taking work: its agent has never connected" })
      statuses.set(agent.id, healthy)
      const detail = yield* runners.get(user, agent.id)
      expect(detail.agent).toEqual({
        connected: true,
        reported_at: DateTime.makeUnsafe("2026-11-28T17:00:00.000Z"),
        agent_version: "0.1.0",
        gpu: { name: "NVIDIA GeForce RTX 4090", vram_total_bytes: 24 * GiB, vram_free_bytes: 20 * GiB },
        disk: { free_bytes: 200 * GiB, total_bytes: 1000 * GiB },
        models: { count: 2, bytes: 6.5 * GiB },
        model_budget_bytes: 100 * GiB,
        cleanup: true,
        claiming: true,
        reason: null
      })
      expect((yield* runners.get(user, direct.id)).agent).toBeNull()
      const listed = (yield* runners.list(user, {})).items
      expect(Object.fromEntries(listed.map((r) => [r.name, r.agent?.connected ?? null]))).toEqual({ direct: null, "home-gpu": true })
    }).pipe(Effect.provide(layerWith(statuses))))

  it.effect("says why a runner whose agent reports low disk takes no work", () =>
    Effect.gen(function*() {
      const { agent, runners, user } = yield* createBoth
      statuses.set(agent.id, { ...healthy, disk: { free_bytes: 1.2 * GiB, total_bytes: 100 * GiB } })
      const view = (yield* runners.get(user, agent.id)).agent!
      expect([view.connected, view.claiming, view.reason]).toEqual([true, false, "Not taking work: 1.2 GB free disk, below 5 GB"])
    }).pipe(Effect.provide(layerWith(statuses))))

  it.effect("keeps the last report of a disconnected agent, not taking work", () =>
    Effect.gen(function*() {
      const { agent, runners, user } = yield* createBoth
      statuses.set(agent.id, { ...healthy, connected: false })
      const view = (yield* runners.get(user, agent.id)).agent!
      expect(view).toMatchObject({ connected: false, gpu: { name: "NVIDIA GeForce RTX 4090" }, claiming: false, reason: "Not taking work: its agent is not connected" })
    }).pipe(Effect.provide(layerWith(statuses))))

  it.effect("uses the configured threshold (WES_AGENT_MIN_FREE_DISK)", () =>
    Effect.gen(function*() {
      const { agent, runners, user } = yield* createBoth
      statuses.set(agent.id, { ...healthy, disk: { free_bytes: 1.2 * GiB, total_bytes: 100 * GiB } })
      expect((yield* runners.get(user, agent.id)).agent).toMatchObject({ claiming: true, reason: null })
    }).pipe(Effect.provide(layerWith(statuses, GiB))))

  it.effect("shows an agent runner as not connected where no agents are served (an embedder with direct runners only)", () =>
    Effect.gen(function*() {
      const { agent, direct, runners, user } = yield* createBoth
      expect((yield* runners.get(user, agent.id)).agent).toMatchObject({ connected: false, claiming: false })
      expect((yield* runners.get(user, direct.id)).agent).toBeNull()
    }).pipe(Effect.provide(layerWith(undefined))))
})

describe("claimBlockedReason", () => {
  it("names the free disk and the threshold as a person reads them", () => {
    const low = (free: number) => claimBlockedReason(Option.some({ ...healthy, disk: { free_bytes: free, total_bytes: 100 * GiB } }), { minFreeDiskBytes: 5 * GiB })
    expect(low(300 * 1024 ** 2)).toBe("Not taking work: 300 MB free disk, below 5 GB")
    expect(low(5 * GiB)).toBeNull()
    expect(claimBlockedReason(Option.some({ ...healthy, disk: null }), { minFreeDiskBytes: 5 * GiB })).toBeNull()
    expect([diskText(1.25 * GiB), diskText(10 * GiB), diskText(512)]).toEqual(["1.3 GB", "10 GB", "512 bytes"])
  })
})
