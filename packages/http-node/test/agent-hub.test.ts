/**
 * The server side of the runner agent (issue 34): the agent endpoint, its token check before the
 * upgrade, and workflows driven through the agent's tunnel, against a fake ComfyUI behind a
 * minimal in-test agent (agent-fixture.ts). WES is never told the fake's address: only the agent.
 * Runner tokens are a test layer here (the store's are AgentTokenService's own tests).
 */
import { type AgentIdentity, AgentTokens } from "@wes/core"
import { CLOSE_REPLACED, CLOSE_TOKEN_REVOKED } from "@wes/runner-client/agent-protocol"
import { FakeComfyUI, saveImageWorkflow } from "@wes/runner-client/testing"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { WebSocket } from "ws"
import { connectAgent, HandshakeRefused, type TestAgent } from "./agent-fixture.js"
import { fastDispatch, json, readJson, type RunnerJson, startServer, type TestServer, type WorkflowDetailJson, workflowForm } from "./harness.js"
import { poll } from "./polling.js"

/** Runner tokens of the test: token -> identity; revoked ones are taken out of `live`. */
const issued = new Map<string, AgentIdentity>()
const live = new Set<string>()
const TestTokens = Layer.succeed(AgentTokens, AgentTokens.of({
  verify: (token) => Effect.sync(() => Option.filter(Option.fromUndefinedOr(issued.get(token)), (i) => live.has(i.token_id))),
  isLive: (tokenId) => Effect.sync(() => live.has(tokenId))
}))

/** The presence lease of these tests: a revoked token is noticed within it. */
const LEASE_MS = 600

let server: TestServer
const fakes: Array<FakeComfyUI> = []
const agents: Array<TestAgent> = []

beforeAll(async () => {
  server = await startServer({
    dispatcher: fastDispatch,
    tiers: { pro: { active_workflows: 100 } },
    agents: { hub: { leaseTime: `${LEASE_MS} millis`, statusInterval: "100 millis" }, tokens: TestTokens }
  })
})
afterAll(async () => {
  await server.close()
})
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.ws.readyState === WebSocket.OPEN ? a.close() : undefined))
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})

type User = Awaited<ReturnType<TestServer["user"]>>

/** An agent runner of `u` and a live token for it. */
const agentRunner = async (u: User) => {
  const res = await server.fetch("/v1/runner", json({ name: "behind NAT", connection: "agent" }, u.auth))
  expect(res.status).toBe(201)
  const runner = await readJson<RunnerJson>(res)
  const token = `wes_rt_${crypto.randomUUID()}`
  const token_id = crypto.randomUUID()
  issued.set(token, { token_id, runner_id: runner.id, user_id: u.id })
  live.add(token_id)
  return { runner, token, token_id }
}

const agentFor = async (token: string) => {
  const fake = await FakeComfyUI.start()
  fakes.push(fake)
  const agent = await connectAgent({ server: server.url, token, comfyui: fake.url })
  agents.push(agent)
  return { fake, agent }
}

const submit = async (u: User, workflow: unknown) => {
  const res = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "run" }, workflow) })
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${await res.text()}`)
  return readJson<{ id: string }>(res)
}

const completed = (u: User, id: string) => {
  let last = ""
  return poll(() => `workflow ${id} to complete (is ${last})`, async () => {
    const w = await readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${id}`, { headers: u.auth }))
    last = w.status
    if (["failed", "invalid", "cancelled"].includes(w.status)) throw new Error(`workflow ended ${w.status}: ${w.exception_message}`)
    return w.status === "completed" ? w : undefined
  })
}

describe("the agent endpoint", () => {
  it("runs a workflow to completed through the agent's tunnel, with its output downloadable, and reads the agent's status", async () => {
    const u = await server.user("pro")
    const { token } = await agentRunner(u)
    const { fake, agent } = await agentFor(token)
    const w = await submit(u, saveImageWorkflow({ prefix: "agent/out" }))
    await completed(u, w.id)

    const { outputs } = await readJson<{ outputs: Array<{ id: string; size: number; content_type: string }> }>(
      await server.fetch(`/v1/workflow/${w.id}/outputs`, { headers: u.auth })
    )
    expect(outputs).toHaveLength(1)
    const file = await server.fetch(`/v1/workflow/${w.id}/outputs/${outputs[0]!.id}`, { headers: u.auth })
    const bytes = new Uint8Array(await file.arrayBuffer())
    expect(bytes.length).toBe(outputs[0]!.size)
    expect(Array.from(bytes.slice(0, 4))).toEqual([137, 80, 78, 71])
    // The prompt reached the ComfyUI behind the agent once, through its tunnels.
    expect(fake.submissions.filter((s) => s.prompt_id === w.id)).toHaveLength(1)
    expect(agent.tunnels()).toBeGreaterThan(0)
    await poll("WES to read the agent's status", () => agent.requests.some((r) => r.method === "GET" && r.path === "/status") || undefined)
  })

  it("answers a wrong, revoked or missing runner token with 401 before any upgrade, and a missing subprotocol with 400", async () => {
    const u = await server.user("pro")
    const { token, token_id } = await agentRunner(u)
    const refused = (t: string) => connectAgent({ server: server.url, token: t, comfyui: "http://127.0.0.1:9" }).then(() => 0, (e: unknown) => e instanceof HandshakeRefused ? e.status : -1)
    expect(await refused("wes_rt_not-a-token")).toBe(401)
    live.delete(token_id)
    expect(await refused(token)).toBe(401)
    live.add(token_id)

    const status = (headers: Record<string, string>, protocol?: string) =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(`${server.url.replace("http", "ws")}/agent/v1/connect`, protocol === undefined ? [] : [protocol], { headers })
        ws.once("unexpected-response", (_req, res) => {
          resolve(res.statusCode ?? 0)
          ws.terminate()
        })
        ws.once("open", () => {
          resolve(101)
          ws.terminate()
        })
        ws.once("error", () => resolve(-1))
      })
    expect(await status({})).toBe(401)
    expect(await status({ authorization: `Bearer ${token}` })).toBe(400)
    expect(await status({ authorization: `Bearer ${token}` }, "wes-agent.h2.v1")).toBe(101)
  })

  it("closes the connection with CLOSE_TOKEN_REVOKED within a lease once the token is revoked", async () => {
    const u = await server.user("pro")
    const { token, token_id } = await agentRunner(u)
    const { agent } = await agentFor(token)
    const revokedAt = Date.now()
    live.delete(token_id)
    const closed = await agent.closed
    expect(closed.code).toBe(CLOSE_TOKEN_REVOKED)
    expect(Date.now() - revokedAt).toBeLessThan(LEASE_MS + 500)
  })

  it("shows the agent's reported health in the runner while connected, and the runner as not connected once it leaves", async () => {
    const u = await server.user("pro")
    const { runner, token } = await agentRunner(u)
    const { agent } = await agentFor(token)
    const agentOf = async () =>
      (await readJson<{ agent: { connected: boolean; agent_version: string | null; gpu: { name: string } | null } | null }>(
        await server.fetch(`/v1/runner/${runner.id}`, { headers: u.auth })
      )).agent
    await poll("the runner to show its agent's status", async () => (await agentOf())?.agent_version === "0.0.0-test" || undefined)
    expect(await agentOf()).toMatchObject({ connected: true, gpu: { name: "Test GPU" } })
    await agent.close()
    await poll("the runner to show its agent gone", async () => (await agentOf())?.connected === false || undefined)
  })

  it("tells every connected agent to come back later (1001) when the server stops", async () => {
    const other = await startServer({ dispatcher: fastDispatch, agents: { tokens: TestTokens } })
    const u = await other.user("pro")
    const created = await readJson<RunnerJson>(await other.fetch("/v1/runner", json({ name: "n", connection: "agent" }, u.auth)))
    const token = `wes_rt_${crypto.randomUUID()}`
    const token_id = crypto.randomUUID()
    issued.set(token, { token_id, runner_id: created.id, user_id: u.id })
    live.add(token_id)
    const agent = await connectAgent({ server: other.url, token, comfyui: "http://127.0.0.1:9" })
    await other.close()
    expect((await agent.closed).code).toBe(1001)
  })

  it("a newer connection of the same runner's agent replaces the older (CLOSE_REPLACED), and work goes through the newer", async () => {
    const u = await server.user("pro")
    const { token } = await agentRunner(u)
    const first = await agentFor(token)
    const second = await agentFor(token)
    expect((await first.agent.closed).code).toBe(CLOSE_REPLACED)
    const w = await submit(u, saveImageWorkflow({ prefix: "replaced" }))
    await completed(u, w.id)
    expect(second.fake.submissions.map((s) => s.prompt_id)).toContain(w.id)
    expect(first.fake.submissions).toEqual([])
  })
})
