/**
 * `wes-agent` end to end with `wes serve` processes on PostgreSQL and a fake ComfyUI (issue 34):
 * the agent killed (SIGKILL) in the middle of a run and started again, while its ComfyUI finishes
 * the work it holds: every workflow ends `completed` and the runner received each prompt exactly
 * once; two instances on one database, the agent connected to the first, workflows created on the
 * second complete (driven by the first, which holds the runner's lease). WES is never told the
 * fake's address: only the agent is.
 */
import { saveImageWorkflow } from "@wes/runner-client/testing"
import { afterEach, describe, expect, it } from "vitest"
import { addAgentRunner, agentPresence, awaitAgent, issueRunnerToken, killAgents, startAgentProcess } from "./agents.js"
import { readJson, type WorkflowDetailJson } from "./harness.js"
import { countSubmissions, createUser, createWorkflow, type Instance, startInstance, type TestUser, watchLeases } from "./instances.js"
import { poll } from "./polling.js"
import { processSuite } from "./process-suite.js"

const suite = processSuite()
// Registered after the suite's teardown, so it runs before it: the agents go before their instances.
afterEach(killAgents)

const statusOf = async (instance: Instance, user: TestUser, id: string) =>
  (await readJson<WorkflowDetailJson>(await instance.fetch(`/v1/workflow/${id}`, { headers: user.auth }))).status

/** Waits until every workflow of `ids` is completed, read through `instance`; fails at once if one ends otherwise. */
const awaitCompleted = (instance: Instance, user: TestUser, ids: ReadonlyArray<string>, timeoutMs = 60_000) => {
  let last: Array<string> = []
  return poll(() => `workflows to complete through ${instance.name}: ${last.join(", ")}`, async () => {
    last = await Promise.all(ids.map(async (id) => `${id}:${await statusOf(instance, user, id)}`))
    const ended = last.filter((s) => /:(failed|invalid|cancelled)$/.test(s))
    if (ended.length > 0) throw new Error(`workflows ended otherwise than completed: ${ended.join(", ")}`)
    return last.every((s) => s.endsWith(":completed")) ? true : undefined
  }, timeoutMs, 100)
}

describe("wes-agent with wes serve processes on PostgreSQL", () => {
  it("the agent killed mid-run and restarted: every workflow completes, and each prompt reached ComfyUI exactly once", async () => {
    const database = await suite.database()
    const wes = await startInstance("A", database.url())
    const [fake] = await suite.fakes(1)
    const user = await createUser(wes)
    const runner = await addAgentRunner(wes, user, "behind-nat")
    const { token } = await issueRunnerToken(wes, user, runner.id)
    const first = startAgentProcess({ server: wes.base, comfyui: fake!.url, token })
    await awaitAgent(wes, user, runner.id, true, 30_000, () => `${first.output()}\nwes: ${wes.out.stdout.slice(-3000)}`)

    // One prompt taken and started by ComfyUI (its nodes held), one waiting behind it.
    fake!.hold()
    const running = await createWorkflow(wes, user, saveImageWorkflow({ color: 0x102030, prefix: "agent/running" }))
    const waiting = await createWorkflow(wes, user, saveImageWorkflow({ color: 0x405060, prefix: "agent/waiting" }))
    await fake!.whenRunning(running.id, 30_000)
    await fake!.waitUntil(() => fake!.state.pending.includes(waiting.id), 30_000, `${waiting.id} to wait in the queue`)
    // WES knows both are on the runner before the agent goes.
    for (const w of [running, waiting]) {
      await poll(`${w.id} to be queued or running`, async () => (/^(queued|running)$/.test(await statusOf(wes, user, w.id)) ? true : undefined), 15_000, 50)
    }

    await first.kill()
    await awaitAgent(wes, user, runner.id, false, 30_000, first.output)
    // ComfyUI finishes both while WES cannot see it; a third workflow is created meanwhile.
    fake!.release()
    await fake!.whenFinished(waiting.id, 30_000)
    const meanwhile = await createWorkflow(wes, user, saveImageWorkflow({ color: 0x708090, prefix: "agent/meanwhile" }))
    expect(await statusOf(wes, user, running.id)).not.toBe("completed")

    const second = startAgentProcess({ server: wes.base, comfyui: fake!.url, token })
    await awaitAgent(wes, user, runner.id, true, 30_000, second.output)
    const ids = [running.id, waiting.id, meanwhile.id]
    await awaitCompleted(wes, user, ids)

    const counts = countSubmissions(fake!.submissions)
    expect(counts.duplicates).toEqual([])
    expect(fake!.submissions.map((s) => s.prompt_id).sort()).toEqual([...ids].sort())
    // The outputs ComfyUI wrote while the agent was down were copied once it was back.
    for (const id of ids) {
      const outputs = await readJson<{ outputs: Array<{ node_id: string }> }>(await wes.fetch(`/v1/workflow/${id}/outputs`, { headers: user.auth }))
      expect(outputs.outputs.map((o) => o.node_id)).toEqual(["3"])
    }
  }, 120_000)

  it("two instances on one database: the agent connected to the first drives the runner; workflows created on the second complete", async () => {
    const database = await suite.database()
    const [a, b] = await Promise.all([startInstance("A", database.url()), startInstance("B", database.url())])
    const [fake] = await suite.fakes(1)
    const user = await createUser(b)
    const runner = await addAgentRunner(b, user, "behind-nat")
    const { token } = await issueRunnerToken(b, user, runner.id)
    const leases = watchLeases(database)
    const agent = startAgentProcess({ server: a.base, comfyui: fake!.url, token })
    await awaitAgent(a, user, runner.id, true, 30_000, agent.output)
    // The instance holding the agent's connection holds its presence: B will not drive the runner.
    expect(await agentPresence(database, runner.id)).toEqual({ owner: expect.stringMatching(new RegExp(`-${a.pid}-`)), live: true })

    const created = await Promise.all(Array.from({ length: 12 }, (_, i) =>
      createWorkflow(b, user, saveImageWorkflow({ color: 0x100000 + i, prefix: `agent/b${i}` }))))
    const ids = created.map((w) => w.id)
    await awaitCompleted(b, user, ids)
    await leases.stop()

    const counts = countSubmissions(fake!.submissions)
    expect(counts.duplicates).toEqual([])
    expect(fake!.submissions.map((s) => s.prompt_id).sort()).toEqual([...ids].sort())
    // Every prompt was posted under A's lease of the runner (WebSocket client ids name the lease's epoch); B never held it.
    expect(fake!.submissions.map((s) => leases.ownerOf(s.client_id)).filter((o) => o === undefined || !a.owns(o))).toEqual([])
    expect((await database.leases()).filter((l) => l.runner_id === runner.id && b.owns(l.owner))).toEqual([])
  }, 120_000)
})
