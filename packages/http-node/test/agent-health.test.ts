/**
 * Issue 34, items 4 and 5, end to end: a real `wes-agent` beside a fake ComfyUI connected to one
 * of two `wes serve` processes on PostgreSQL. Its health (GPU, disk, models) shows in the runner's
 * detail on both instances, and in `/metrics` only on the instance holding its connection; the
 * other instance, started with a free-disk threshold above any disk, says the runner takes no
 * work and why. Killed, the agent shows as not connected, its series gone.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import { addAgentRunner, awaitAgent, issueRunnerToken, killAgents, runnerDetail, startAgentProcess } from "./agents.js"
import { createUser, type Instance, startInstance } from "./instances.js"
import { poll } from "./polling.js"
import { processSuite } from "./process-suite.js"
import { seriesValue } from "./prometheus.js"

const suite = processSuite()
afterEach(killAgents)
/** ComfyUI's folder as the agent is told it: the disk it reports is the one holding it. */
const comfyuiDir = fs.mkdtempSync(path.join(os.tmpdir(), "wes-agent-health-"))
for (const folder of ["models", "output", "temp", "input"]) fs.mkdirSync(path.join(comfyuiDir, folder))
afterAll(() => fs.rmSync(comfyuiDir, { recursive: true, force: true }))

interface AgentJson {
  readonly connected: boolean
  readonly gpu: { readonly name: string } | null
  readonly disk: { readonly free_bytes: number; readonly total_bytes: number } | null
  readonly models: { readonly count: number; readonly bytes: number }
  readonly cleanup: boolean | null
  readonly claiming: boolean
  readonly reason: string | null
}

const agentOf = async (instance: Instance, user: Parameters<typeof runnerDetail>[1], id: string) =>
  (await runnerDetail(instance, user, id)).agent as AgentJson | null

const scrape = async (instance: Instance) => (await instance.fetch("/metrics")).text()

describe("an agent runner's health", () => {
  it("shows in the detail on every instance and in /metrics on the one holding the agent; not claiming says why", async () => {
    const database = await suite.database()
    const a = await startInstance("A", database.url())
    // B's threshold is above any disk: there the runner takes no work for lack of disk.
    const b = await startInstance("B", database.url(), { WES_AGENT_MIN_FREE_DISK: "8000TB" })
    const [fake] = await suite.fakes(1)
    const user = await createUser(a)
    const runner = await addAgentRunner(a, user, "behind-nat")
    const direct = await a.fetch("/v1/runner", {
      method: "POST",
      headers: { ...user.auth, "content-type": "application/json" },
      body: JSON.stringify({ name: "direct", endpoint: fake!.url })
    })
    expect(direct.status).toBe(201)
    expect(((await direct.json()) as { agent: unknown }).agent).toBeNull()
    expect(await agentOf(a, user, runner.id)).toMatchObject({ connected: false, claiming: false, reason: "Not taking work: its agent has never connected" })

    const { token } = await issueRunnerToken(a, user, runner.id)
    const agent = startAgentProcess({ server: a.base, comfyui: fake!.url, token, comfyuiDir })
    await awaitAgent(a, user, runner.id, true, 30_000, agent.output())
    // Its first report: the fake's device (no nvidia-smi here), the disk it runs on, no models placed.
    const health = await poll(() => `the agent's first report (${agent.output()})`, async () => {
      const h = await agentOf(a, user, runner.id)
      return h?.disk !== null && h?.disk !== undefined ? h : undefined
    }, 30_000, 100)
    expect(health).toMatchObject({ connected: true, gpu: { name: expect.any(String) }, models: { count: 0, bytes: 0 }, claiming: true, reason: null })
    expect(health.disk!.free_bytes).toBeGreaterThan(0)
    expect(health.disk!.free_bytes).toBeLessThanOrEqual(health.disk!.total_bytes)

    // B shows the same report (from the store), and with its own threshold, why the runner takes no work there.
    const fromB = (await agentOf(b, user, runner.id))!
    expect(fromB).toMatchObject({ connected: true, claiming: false })
    expect(fromB.reason).toMatch(/^Not taking work: [\d.]+ (GB|MB|bytes) free disk, below 8192000 GB$/)

    // /metrics: A holds the connection and has the runner's gauges; B has none of them.
    const labels = { runner_id: runner.id, runner_kind: "user" }
    const textA = await scrape(a)
    expect(seriesValue(textA, "wes_runner_agent_connected", labels)).toBe(1)
    expect(seriesValue(textA, "wes_runner_disk_total_bytes", labels)).toBe(health.disk!.total_bytes)
    expect(seriesValue(textA, "wes_runner_disk_free_bytes", labels)).toBeGreaterThan(0)
    expect(seriesValue(textA, "wes_runner_models_bytes", labels)).toBe(0)
    expect(await scrape(b)).not.toContain(runner.id)

    await agent.kill()
    await awaitAgent(a, user, runner.id, false, 30_000, "after the kill")
    expect(await agentOf(a, user, runner.id)).toMatchObject({ connected: false, claiming: false, reason: "Not taking work: its agent is not connected" })
    await poll(() => "the runner's series to leave A's /metrics", async () => (!(await scrape(a)).includes(runner.id) ? true : undefined), 30_000, 100)
  }, 120_000)
})
