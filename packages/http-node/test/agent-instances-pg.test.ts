/**
 * Two servers on one PostgreSQL schema with an agent runner (issue 34): the instance holding the
 * agent's connection drives the runner, whichever instance the workflow was created on; when the
 * agent connects to the other instance, that one takes the runner over (its presence and the
 * runner's lease), the first closes its old connection, and work goes on through the second.
 * Runner tokens are a test layer; the presence and leases are the store's.
 */
import { type AgentIdentity, AgentTokens } from "@wes/core"
import { CLOSE_REPLACED } from "@wes/runner-client/agent-protocol"
import { FakeComfyUI, saveImageWorkflow } from "@wes/runner-client/testing"
import { PgStoreLive } from "@wes/storage-pg"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { connectAgent, type TestAgent } from "./agent-fixture.js"
import { fastDispatch, json, readJson, type RunnerJson, startServer, type TestServer, type WorkflowDetailJson, workflowForm } from "./harness.js"
import { TestDatabase } from "./instances.js"
import { poll } from "./polling.js"

const issued = new Map<string, AgentIdentity>()
const TestTokens = Layer.succeed(AgentTokens, AgentTokens.of({
  verify: (token) => Effect.sync(() => Option.fromUndefinedOr(issued.get(token))),
  isLive: () => Effect.succeed(true)
}))

let db: TestDatabase
let a: TestServer
let b: TestServer
let fake: FakeComfyUI
const agents: Array<TestAgent> = []

const serverOn = (url: string) =>
  startServer({
    dispatcher: fastDispatch,
    tiers: { pro: { active_workflows: 100 } },
    store: PgStoreLive({ url: Redacted.make(url), maxConnections: 4, runnerLeases: { leaseTime: "3 seconds", renewInterval: "200 millis" } }),
    agents: { hub: { leaseTime: "900 millis", statusInterval: "200 millis" }, tokens: TestTokens }
  })

beforeAll(async () => {
  db = await TestDatabase.create()
  ;[a, b] = await Promise.all([serverOn(db.url()), serverOn(db.url())])
  fake = await FakeComfyUI.start()
}, 60_000)
afterAll(async () => {
  await Promise.all(agents.map((x) => x.close()))
  await Promise.all([a?.close(), b?.close()])
  await fake?.close()
  await db?.drop()
})

type User = Awaited<ReturnType<TestServer["user"]>>

const submit = async (via: TestServer, u: User) => {
  const res = await via.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "run" }, saveImageWorkflow({ prefix: "pg" })) })
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${await res.text()}`)
  return (await readJson<{ id: string }>(res)).id
}

const completed = (via: TestServer, u: User, id: string) =>
  poll(`workflow ${id} to complete`, async () => {
    const w = await readJson<WorkflowDetailJson>(await via.fetch(`/v1/workflow/${id}`, { headers: u.auth }))
    if (["failed", "invalid", "cancelled"].includes(w.status)) throw new Error(`workflow ended ${w.status}: ${w.exception_message}`)
    return w.status === "completed" ? true : undefined
  }, 20_000)

/** The instance whose presence is live for the runner, and the live lease's owner. */
const holders = async (runnerId: string) => {
  const [presence] = await db.query((sql) =>
    sql<{ owner: string }>`SELECT owner FROM agent_presence WHERE runner_id = ${runnerId} AND expires_at > now()`)
  const lease = (await db.leases()).find((l) => l.runner_id === runnerId && l.live)
  return { presence: presence?.owner, lease: lease?.owner }
}

describe("an agent runner with two instances on PostgreSQL", () => {
  it("is driven by the instance its agent is connected to; reconnecting to the other moves the runner there", async () => {
    const u = await a.user("pro")
    const res = await a.fetch("/v1/runner", json({ name: "behind NAT", connection: "agent" }, u.auth))
    expect(res.status).toBe(201)
    const runner = await readJson<RunnerJson>(res)
    const token = `wes_rt_${crypto.randomUUID()}`
    issued.set(token, { token_id: crypto.randomUUID(), runner_id: runner.id, user_id: u.id })

    const toA = await connectAgent({ server: a.url, token, comfyui: fake.url })
    agents.push(toA)
    // Created on B, driven by A: B never acquires a runner whose agent is live on A.
    const first = await submit(b, u)
    await completed(b, u, first)
    const onA = await holders(runner.id)
    expect(onA.presence).toBeDefined()
    expect(onA.lease).toBe(onA.presence)

    const toB = await connectAgent({ server: b.url, token, comfyui: fake.url })
    agents.push(toB)
    // A finds its presence taken at its next renewal and closes its connection.
    expect((await toA.closed).code).toBe(CLOSE_REPLACED)
    const second = await submit(a, u)
    await completed(a, u, second)
    const onB = await holders(runner.id)
    expect(onB.presence).toBeDefined()
    expect(onB.presence).not.toBe(onA.presence)
    expect(onB.lease).toBe(onB.presence)
    // Each prompt reached ComfyUI once.
    expect(fake.submissions.map((s) => s.prompt_id).sort()).toEqual([first, second].sort())
  })
})
