/**
 * Core's `RunnerAgents` on the hub (AgentRunnerAgents.ts): provisioning follows the agent's NDJSON
 * progress and fails naming the file the agent could not place; cleanup posts a run's files as
 * the protocol names them; a runner whose agent is not connected here is unreachable; the status
 * is read from the presence store. The agent is the test's minimal one, over plain TCP here.
 */
import * as http2 from "node:http2"
import type * as net from "node:net"
import { AgentPresence, type ModelFile, type ProvisionProgress, RunnerAgents } from "@wes/core"
import { AGENT_NOT_CONNECTED } from "@wes/runner-client"
import type { ProvisionLine } from "@wes/runner-client/agent-protocol"
import { MemoryAgentPresence } from "@wes/storage-memory"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { describe, expect, it } from "vitest"
import { agentServer, type TestAgent, testStatus } from "./agent-fixture.js"
import { AgentHub } from "../src/AgentHub.js"
import { RunnerAgentsLive } from "../src/AgentRunnerAgents.js"

const model = (filename: string): ModelFile => ({
  url: `https://models.example/${filename}`,
  sha256: "a".repeat(64),
  folder: "checkpoints",
  filename
})

/** Runs `test` with RunnerAgents whose runner `r1` has a connected agent answering `provision`. */
const withAgent = <A>(provision: ReadonlyArray<ProvisionLine>, test: (requests: TestAgent["requests"]) => Effect.Effect<A, unknown, RunnerAgents | AgentHub | AgentPresence>) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const requests: TestAgent["requests"] = []
    const server = agentServer({ server: "", token: "", comfyui: "http://127.0.0.1:9", provision }, requests, { tunnels: 0 })
    yield* Effect.acquireRelease(
      Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
      () => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
    )
    const session = http2.connect(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}`)
    yield* Effect.addFinalizer(() => Effect.sync(() => session.destroy()))
    const hub = yield* AgentHub
    hub.register({ runnerId: "r1", tokenId: "t1", session, close: () => session.close() })
    return yield* test(requests)
  })).pipe(Effect.provide(RunnerAgentsLive.pipe(Layer.provideMerge(Layer.merge(AgentHub.layer(), MemoryAgentPresence))))))

describe("RunnerAgents over the hub", () => {
  it("provisions: reports each progress line, and finishes on done", async () => {
    const progress: Array<ProvisionProgress> = []
    const lines: ReadonlyArray<ProvisionLine> = [
      { type: "progress", folder: "checkpoints", filename: "a.safetensors", bytes: 10, total: 20 },
      { type: "progress", folder: "checkpoints", filename: "a.safetensors", bytes: 20, total: 20 },
      { type: "done" }
    ]
    const requests = await withAgent(lines, (requests) =>
      Effect.gen(function*() {
        const agents = yield* RunnerAgents
        yield* agents.provision("r1", [model("a.safetensors")], (p) => Effect.sync(() => progress.push(p)))
        return requests
      }))
    expect(progress).toEqual([
      { folder: "checkpoints", filename: "a.safetensors", bytes: 10, total: 20 },
      { folder: "checkpoints", filename: "a.safetensors", bytes: 20, total: 20 }
    ])
    expect(requests).toEqual([{ method: "POST", path: "/provision", body: { models: [model("a.safetensors")] } }])
  })

  it("fails provisioning with ProvisionFailed naming the file the agent could not place", async () => {
    const lines: ReadonlyArray<ProvisionLine> = [{ type: "failed", filename: "b.safetensors", message: "sha256 mismatch" }]
    const error = await withAgent(lines, () =>
      Effect.gen(function*() {
        const agents = yield* RunnerAgents
        return yield* Effect.flip(agents.provision("r1", [model("b.safetensors")], () => Effect.void))
      }))
    expect(error).toMatchObject({ _tag: "ProvisionFailed", runner_id: "r1", filename: "b.safetensors" })
    expect((error as { message: string }).message).toContain("b.safetensors: sha256 mismatch")
  })

  it("posts a run's files for cleanup; a runner without an agent here is unreachable, saying why", async () => {
    const { requests, missing } = await withAgent([], (requests) =>
      Effect.gen(function*() {
        const agents = yield* RunnerAgents
        yield* agents.cleanup("r1", {
          prompt_id: "p1",
          outputs: [{ node_id: "9", filename: "out_00001_.png", subfolder: "wes", type: "output" }],
          inputs: [{ name: "in.png", subfolder: "wes", type: "input" }]
        })
        const missing = yield* Effect.flip(agents.cleanup("r2", { prompt_id: "p2", outputs: [], inputs: [] }))
        return { requests, missing }
      }))
    expect(requests).toEqual([{
      method: "POST",
      path: "/cleanup",
      body: {
        prompt_id: "p1",
        outputs: [{ filename: "out_00001_.png", subfolder: "wes", type: "output" }],
        inputs: [{ filename: "in.png", subfolder: "wes", type: "input" }]
      }
    }])
    expect(missing).toMatchObject({ _tag: "RunnerUnreachable", runner_id: "r2", message: AGENT_NOT_CONNECTED })
  })

  it("reads the status the agent last reported from the store, with whether it is connected", async () => {
    const { before, after, connected } = await withAgent([], () =>
      Effect.gen(function*() {
        const agents = yield* RunnerAgents
        const presence = yield* AgentPresence
        const before = yield* agents.status("r1")
        yield* presence.take("r1", "me", 60_000)
        yield* presence.report("r1", "me", testStatus)
        return { before, after: yield* agents.status("r1"), connected: [agents.connected("r1"), agents.connected("r2")] }
      }))
    expect(before).toEqual(Option.none())
    expect(Option.getOrThrow(after)).toMatchObject({ ...testStatus, connected: true, reported_at: expect.any(String) })
    expect(connected).toEqual([true, false])
  })
})
