/**
 * Runner tokens end to end (issue 34): `wes serve` on PostgreSQL (leases of 3 s) and `wes-agent`
 * processes before a fake ComfyUI. The agent endpoint refuses, before any upgrade, a missing,
 * wrong, malformed or revoked runner token, and an API token (and a real agent with a revoked
 * token says it was refused); an agent whose token is revoked, through another instance, while it
 * is connected is disconnected within a lease, says why in its log, and does not get back in; a
 * runner token is no API token: /v1 answers it 401.
 */
import { afterEach, describe, expect, it } from "vitest"
import {
  addAgentRunner,
  agentHandshake,
  agentPresence,
  awaitAgent,
  issueRunnerToken,
  killAgents,
  revokeRunnerToken,
  runnerDetail,
  startAgentProcess
} from "./agents.js"
import { createUser, startInstance } from "./instances.js"
import { poll } from "./polling.js"
import { processSuite } from "./process-suite.js"

const suite = processSuite()
// Registered after the suite's teardown, so it runs before it: the agents go before their instances.
afterEach(killAgents)

/** The instances' WES_LEASE (instances.ts). */
const LEASE_MS = 3_000

describe("runner tokens, end to end", () => {
  it("the agent endpoint refuses (401, no upgrade) no token, a wrong, a malformed or a revoked runner token, and an API token", async () => {
    const database = await suite.database()
    const wes = await startInstance("A", database.url())
    const user = await createUser(wes)
    const runner = await addAgentRunner(wes, user, "behind-nat")
    const live = await issueRunnerToken(wes, user, runner.id)
    const revoked = await issueRunnerToken(wes, user, runner.id)
    await revokeRunnerToken(wes, user, runner.id, revoked.id)
    // A well-formed token of the right shape that was never issued: the live one with its secret changed.
    const wrong = live.token.slice(0, -6) + (live.token.endsWith("aaaaaa") ? "bbbbbb" : "aaaaaa")

    const refused = {
      none: await agentHandshake(wes.base, undefined),
      wrong: await agentHandshake(wes.base, `Bearer ${wrong}`),
      malformed: await agentHandshake(wes.base, "Bearer wes_rt_not-a-token"),
      revoked: await agentHandshake(wes.base, `Bearer ${revoked.token}`),
      api: await agentHandshake(wes.base, user.auth["authorization"])
    }
    expect(Object.fromEntries(Object.entries(refused).map(([k, v]) => [k, v.status]))).toEqual({ none: 401, wrong: 401, malformed: 401, revoked: 401, api: 401 })
    // A real agent with the revoked token is refused and says so; the runner shows no agent connected.
    const [fake] = await suite.fakes(1)
    const refusedAgent = startAgentProcess({ server: wes.base, comfyui: fake!.url, token: revoked.token })
    await poll(() => `the agent to log its refusal; ${refusedAgent.output()}`, () => /runner token was refused/.test(refusedAgent.out.stderr) ? true : undefined, 15_000, 50)
    expect(refusedAgent.out.stderr).not.toMatch(/connected to WES/)
    expect((await runnerDetail(wes, user, runner.id)).agent?.connected).toBe(false)
    // The live token of the same runner is let in (the refusals are about the token).
    const accepted = await agentHandshake(wes.base, `Bearer ${live.token}`)
    expect(accepted.status).toBe(101)
    accepted.socket?.destroy()
  }, 60_000)

  it("a runner token cannot call /v1: 401 on reads and writes", async () => {
    const database = await suite.database()
    const wes = await startInstance("A", database.url())
    const user = await createUser(wes)
    const runner = await addAgentRunner(wes, user, "behind-nat")
    const { token } = await issueRunnerToken(wes, user, runner.id)
    const auth = { authorization: `Bearer ${token}` }
    const answers = await Promise.all([
      wes.fetch("/v1/workflow", { headers: auth }),
      wes.fetch(`/v1/runner/${runner.id}`, { headers: auth }),
      wes.fetch(`/v1/runner/${runner.id}/agent-token`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: "{}" }),
      wes.fetch("/v1/user", { headers: auth })
    ])
    expect(answers.map((r) => r.status)).toEqual([401, 401, 401, 401])
    // The owner's API token is let in (the refusals are about the token).
    expect((await wes.fetch(`/v1/runner/${runner.id}`, { headers: user.auth })).status).toBe(200)
  })

  it("an agent whose token is revoked (through another instance) while connected is disconnected within a lease and stays out", async () => {
    const database = await suite.database()
    // The agent connects to A; its owner revokes the token through B, which holds no connection.
    const [wes, other] = await Promise.all([startInstance("A", database.url()), startInstance("B", database.url())])
    const [fake] = await suite.fakes(1)
    const user = await createUser(wes)
    const runner = await addAgentRunner(wes, user, "behind-nat")
    const { id, token } = await issueRunnerToken(wes, user, runner.id)
    const agent = startAgentProcess({ server: wes.base, comfyui: fake!.url, token })
    await awaitAgent(wes, user, runner.id, true, 30_000, agent.output)
    expect(await agentPresence(database, runner.id)).toEqual({ owner: expect.stringMatching(new RegExp(`-${wes.pid}-`)), live: true })

    const revokedAt = Date.now()
    await revokeRunnerToken(other, user, runner.id, id)
    await awaitAgent(wes, user, runner.id, false, LEASE_MS + 2_000, agent.output)
    const disconnectedAfter = Date.now() - revokedAt
    // The instance let go of the agent's presence (no instance holds its connection).
    expect((await agentPresence(database, runner.id))?.live).toBe(false)
    // The agent says why, and its next attempt is refused.
    await poll(() => `the agent to log the revocation; ${agent.output()}`, () => /runner token was revoked/.test(agent.out.stderr) ? true : undefined, 10_000, 50)
    expect((await agentHandshake(wes.base, `Bearer ${token}`)).status).toBe(401)
    expect(disconnectedAfter).toBeLessThanOrEqual(LEASE_MS + 2_000)
    console.log(`[issue34:revoked] disconnected_after_ms=${disconnectedAfter} lease_ms=${LEASE_MS}`)
  }, 60_000)
})
