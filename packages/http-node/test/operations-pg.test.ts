/**
 * Issue 18 on PostgreSQL, scraped from a running `wes serve` (its store reached through a TCP
 * proxy this test cuts): the gauges of unfinished workflows by status and of the prompts on each
 * runner follow the work; a completed workflow's detail has `transfer_ms` (stored by the
 * completing transition), null before; a store failure seen over HTTP (503) is counted in
 * `wes_store_errors_total` by operation, and the scrape itself still answers while the store is down.
 */
import { saveImageWorkflow } from "@wes/runner-client/testing"
import { describe, expect, it } from "vitest"
import { readJson, type WorkflowDetailJson } from "./harness.js"
import { addRunner, createUser, createWorkflow, DATABASE_URL, type Instance, startInstance } from "./instances.js"
import { poll } from "./polling.js"
import { processSuite } from "./process-suite.js"
import { workGauges } from "./prometheus.js"
import { TcpProxy } from "./tcp-proxy.js"

const suite = processSuite()

const scrape = async (wes: Instance) => {
  const res = await wes.fetch("/metrics")
  expect(res.status).toBe(200)
  return res.text()
}

/** Every `wes_store_errors_total` series, by operation. */
const storeErrors = (text: string): Record<string, number> =>
  Object.fromEntries(
    text.split("\n").flatMap((l) => {
      const m = /^wes_store_errors_total\{operation="([^"]+)"\} (\d+)$/.exec(l)
      return m === null ? [] : [[m[1]!, Number(m[2])] as const]
    })
  )

describe("operations on PostgreSQL", () => {
  it("gauges follow the work, transfer_ms is stored, and store failures are counted by operation", async () => {
    const db = await suite.database()
    const target = new URL(DATABASE_URL)
    const proxy = suite.closeAfter(await TcpProxy.start({ host: target.hostname, port: Number(target.port || "5432") }))
    const wes = await startInstance("W", db.url({ port: proxy.port }))
    const fake = (await suite.fakes(1))[0]!
    fake.hold()
    const user = await createUser(wes)
    const runner = await addRunner(wes, user, "r", fake.url)
    const ids = [
      (await createWorkflow(wes, user, saveImageWorkflow({ prefix: "ops/1" }))).id,
      (await createWorkflow(wes, user, saveImageWorkflow({ prefix: "ops/2" }))).id
    ]
    const detail = async (id: string) => readJson<WorkflowDetailJson>(await wes.fetch(`/v1/workflow/${id}`, { headers: user.auth }))
    const gauges = async () => JSON.stringify(workGauges(await scrape(wes), runner.id))
    let last = ""
    const held = JSON.stringify({ accepted: 0, uploaded: 0, queued: 1, running: 1, in_flight: 2 })
    await poll(() => `gauges ${held} (last ${last})`, async () => ((last = await gauges()) === held ? true : undefined), 20_000, 100)
    for (const id of ids) expect((await detail(id)).transfer_ms).toBeNull()

    fake.release()
    for (const id of ids) {
      const w = await poll(() => `${id} to complete`, async () => {
        const d = await detail(id)
        return d.status === "completed" ? d : undefined
      }, 20_000, 100)
      expect(Number.isInteger(w.transfer_ms)).toBe(true)
      expect(w.transfer_ms).toBeGreaterThanOrEqual(0)
    }
    const idle = JSON.stringify({ accepted: 0, uploaded: 0, queued: 0, running: 0, in_flight: 0 })
    await poll(() => `gauges ${idle} (last ${last})`, async () => ((last = await gauges()) === idle ? true : undefined), 20_000, 100)

    // The store goes away: a read over HTTP answers 503 and is counted under its operation.
    const before = storeErrors(await scrape(wes))
    proxy.cut("refuse")
    const failed = await wes.fetch(`/v1/workflow/${ids[0]}`, { headers: user.auth })
    expect(failed.status).toBe(503)
    // The scrape still answers; once its cached count expires, its own failed read is counted too.
    const during = await poll(() => "the scrape to count its failed read", async () => {
      const errors = storeErrors(await scrape(wes))
      return (errors["workflows.countUnfinishedByStatus"] ?? 0) > (before["workflows.countUnfinishedByStatus"] ?? 0) ? errors : undefined
    }, 20_000, 200)
    proxy.restore()
    // The request's first read is its token's lookup.
    expect(during["api_tokens.findByHash"] ?? 0).toBeGreaterThan(before["api_tokens.findByHash"] ?? 0)
    console.log(`[issue18:store-errors] before=${JSON.stringify(before)} during=${JSON.stringify(during)}`)
  }, 120_000)
})
