/**
 * Retention through the server: with the free tier keeping files 0 days, the sweeper deletes a
 * free user's outputs soon after the workflow ends; the download then answers 410 with the date
 * the output expired, the outputs list shows it, and `/metrics` counts the bytes deleted. A pro
 * user's outputs (30 days) stay.
 */
import { FakeComfyUI } from "@wes/runner-client/testing"
import * as Duration from "effect/Duration"
import * as Option from "effect/Option"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fastDispatch, json, readJson, smokeWorkflow, startServer, type TestServer, workflowForm, type WorkflowSummaryJson } from "./harness.js"
import { until } from "./polling.js"
import { seriesValue } from "./prometheus.js"

let server: TestServer
let fake: FakeComfyUI

beforeAll(async () => {
  fake = await FakeComfyUI.start()
  server = await startServer({
    dispatcher: fastDispatch,
    tiers: { free: { retention_days: 0 } },
    retention: { interval: Option.some(Duration.millis(50)), store: "memory", eventsAfter: Duration.days(7), deliveriesAfter: Duration.days(30) }
  })
})
afterAll(async () => {
  await server.close()
  await fake.close()
})

interface OutputJson {
  readonly id: string
  readonly size: number
  readonly expired_at: string | null
}

/** A user of `tier` with a runner, and one smoke workflow of theirs run to its end: its id, end and outputs. */
const finished = async (tier: "free" | "pro") => {
  const u = await server.user(tier)
  expect((await server.fetch("/v1/runner", json({ name: "runner", endpoint: fake.url }, u.auth))).status).toBe(201)
  const res = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "kept?" }, smokeWorkflow()) })
  const { id } = await readJson<WorkflowSummaryJson>(res)
  await (await server.fetch(`/v1/workflow/${id}/subscribe`, { headers: { ...u.auth, "last-event-id": "0" } })).text()
  const workflow = await readJson<{ status: string; completed_at: string }>(await server.fetch(`/v1/workflow/${id}`, { headers: u.auth }))
  expect(workflow.status).toBe("completed")
  const outputs = async () => (await readJson<{ outputs: Array<OutputJson> }>(await server.fetch(`/v1/workflow/${id}/outputs`, { headers: u.auth }))).outputs
  const download = (o: OutputJson) => server.fetch(`/v1/workflow/${id}/outputs/${o.id}`, { headers: u.auth })
  return { completedAt: workflow.completed_at, outputs, download }
}

describe("retention", () => {
  it("an expired output answers 410 with the date it expired; the list shows it; /metrics counts the bytes deleted; a pro user's stays", async () => {
    const pro = await finished("pro")
    const free = await finished("free")
    const [output] = await free.outputs()
    expect(output!.size).toBeGreaterThan(0)
    await until("the free user's output to expire", async () => (await free.download(output!)).status === 410)
    const res = await free.download(output!)
    expect(res.headers.get("content-type")).toContain("application/json")
    expect(await res.json()).toEqual({
      status: 410,
      message: `Output expired on ${free.completedAt} (retention: 0 days); its file was deleted`,
      expired_at: free.completedAt
    })
    expect((await free.outputs()).map((o) => o.expired_at)).toEqual([free.completedAt])
    const [kept] = await pro.outputs()
    const scrape = async () => await (await server.fetch("/metrics")).text()
    // The sweep that expired it updates the metrics as it ends.
    await until("the sweep's metrics", async () => seriesValue(await scrape(), "wes_blob_stored_bytes", { store: "memory" }) === kept!.size)
    const metrics = await scrape()
    expect(seriesValue(metrics, "wes_retention_deleted_bytes_total", { store: "memory" })).toBe(output!.size)
    expect(seriesValue(metrics, "wes_retention_deleted_blobs_total", { store: "memory" })).toBe(1)
    expect(kept!.expired_at).toBeNull()
    expect((await pro.download(kept!)).status).toBe(200)
  })
})
