/**
 * Webhooks on PostgreSQL with several `wes serve` instances (issue 16): 1,000 workflows over two
 * instances give 1,000 terminal deliveries, each received once and in order per workflow; an
 * instance killed with deliveries pending leaves them to another, which delivers them all.
 */
import { FakeComfyUI, saveImageWorkflow } from "@wes/runner-client/testing"
import { describe, expect, it } from "vitest"
import { verifyWebhook } from "../src/WebhookSigning.js"
import { mapLimit, range } from "./chaos.js"
import { json, readJson } from "./harness.js"
import { addRunner, createUser, createWorkflow, type Instance, startInstance, type TestDatabase, type TestUser } from "./instances.js"
import { poll } from "./polling.js"
import { processSuite } from "./process-suite.js"
import { type Receiver, startReceiver } from "./webhook-receiver.js"

const suite = processSuite()

const ENV = {
  WES_WEBHOOK_ALLOW_PRIVATE: "true",
  WES_WEBHOOK_RETRY_BASE_MS: "100",
  WES_WEBHOOK_TIMEOUT: "2 seconds",
  WES_TIER_LIMITS: JSON.stringify({ plus: { active_workflows: 2_000 } })
}
const TERMINAL_TYPES = ["workflow.completed", "workflow.failed", "workflow.invalid", "workflow.cancelled"]

const setUp = async (instance: Instance, runners: number) => {
  const receiver = suite.closeAfter(await startReceiver())
  const user = await createUser(instance)
  const put = await instance.fetch("/v1/webhook", { ...json({ url: receiver.url }, user.auth), method: "PUT" })
  expect(put.status).toBe(200)
  const { secret } = await readJson<{ secret: string }>(put)
  for (const i of range(runners)) {
    const f = suite.closeAfter(await FakeComfyUI.start())
    await addRunner(instance, user, `r${i}`, f.url)
  }
  return { receiver, secret, user }
}

/** Per workflow, the event types received (verified with the secret), in arrival order. */
const typesByWorkflow = (receiver: Receiver, secret: string) => {
  const byWorkflow = new Map<string, Array<string>>()
  for (const r of receiver.received) {
    const event = verifyWebhook(secret, r.body, r.headers)
    const list = byWorkflow.get(event.data.id) ?? []
    list.push(event.type)
    byWorkflow.set(event.data.id, list)
  }
  return byWorkflow
}

const pendingDeliveries = async (database: TestDatabase) =>
  (await database.query((sql) => sql<{ n: number }>`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status = 'pending'`))[0]!.n

describe("webhooks on several instances", () => {
  it("1,000 workflows over two instances: 1,000 terminal deliveries, none lost, none twice, in order per workflow", async () => {
    const database = await suite.database()
    const [a, b] = await Promise.all([startInstance("A", database.url(), ENV), startInstance("B", database.url(), ENV)])
    const { receiver, secret, user } = await setUp(a, 4)
    const instances = [a, b]
    const created = await mapLimit(range(1_000), 8, (i) => createWorkflow(instances[i % 2]!, user, saveImageWorkflow({ prefix: `hook/${i}` })))
    await receiver.until((rs) => rs.filter((r) => TERMINAL_TYPES.some((t) => r.body.includes(`"${t}"`))).length >= 1_000, 180_000)
    const byWorkflow = typesByWorkflow(receiver, secret)
    expect(created.filter((w) => !byWorkflow.has(w.id))).toEqual([])
    const terminal = created.map((w) => byWorkflow.get(w.id)!.filter((t) => TERMINAL_TYPES.includes(t)).length)
    expect(terminal.filter((n) => n !== 1)).toEqual([])
    // Every workflow completed on a fake: queued, running, completed, each once and in that order.
    const orders = new Set(created.map((w) => byWorkflow.get(w.id)!.join(",")))
    expect([...orders]).toEqual(["workflow.queued,workflow.running,workflow.completed"])
    expect(new Set(receiver.received.map((r) => r.headers["webhook-id"])).size).toBe(receiver.received.length)
    expect(await poll("no pending delivery", async () => ((await pendingDeliveries(database)) === 0 ? true : undefined), 10_000, 100)).toBe(true)
  }, 240_000)

  it("an instance killed with deliveries pending: another delivers every one of them", async () => {
    const database = await suite.database()
    const a = await startInstance("A", database.url(), ENV)
    const { receiver, secret, user } = await setUp(a, 2)
    receiver.answer = () => 503
    const created: Array<{ id: string }> = []
    for (const i of range(20)) created.push(await createWorkflow(a, user as TestUser, saveImageWorkflow({ prefix: `kill/${i}` })))
    // Every workflow completed, and its first delivery (queued) was tried and failed: the later
    // ones wait behind it (order per workflow), all pending.
    await receiver.until((rs) => new Set(rs.filter((r) => r.body.includes("workflow.queued")).map((r) => r.headers["webhook-id"])).size >= 20, 60_000)
    await poll("all 20 completed", async () => ((await database.statusCounts())["completed"] === 20 ? true : undefined), 60_000, 100)
    a.child.kill("SIGKILL")
    await a.exited
    expect(await pendingDeliveries(database)).toBe(60)
    receiver.answer = () => 200
    const before = receiver.received.length
    await startInstance("B", database.url(), ENV)
    await poll("every delivery delivered by B", async () => ((await pendingDeliveries(database)) === 0 ? true : undefined), 60_000, 100)
    const delivered = receiver.received.slice(before)
    const byWorkflow = new Map<string, Array<string>>()
    for (const r of delivered) {
      const event = verifyWebhook(secret, r.body, r.headers)
      byWorkflow.set(event.data.id, [...(byWorkflow.get(event.data.id) ?? []), event.type])
    }
    for (const w of created) {
      const types = byWorkflow.get(w.id)!
      expect(types.slice(-2), w.id).toEqual(["workflow.running", "workflow.completed"])
      expect(types.filter((t) => t === "workflow.queued").length).toBeGreaterThanOrEqual(1)
    }
    const statuses = await database.query((sql) => sql<{ status: string; n: number }>`SELECT status, count(*)::int AS n FROM webhook_deliveries GROUP BY status`)
    expect(statuses).toEqual([{ status: "delivered", n: 60 }])
  }, 180_000)
})
