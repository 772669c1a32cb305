/**
 * Issue 18, item 1 (in part): `GET /metrics` in the Prometheus text format, scraped from a running
 * server that ran a workflow on a fake ComfyUI; the workflow's detail shows how long it queued and
 * ran; with a metrics token the scrape needs it.
 */
import { FakeComfyUI, saveImageWorkflow } from "@wes/runner-client/testing"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { fastDispatch, json, readJson, startServer, type TestServer, type WorkflowDetailJson, workflowForm } from "./harness.js"

/** The value of one series (`name{labels}`) in a Prometheus text answer. */
const valueOf = (text: string, series: string): number | undefined => {
  const line = text.split("\n").find((l) => l.startsWith(series + " "))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe("GET /metrics", () => {
  let server: TestServer
  let fake: FakeComfyUI
  beforeAll(async () => {
    server = await startServer({ dispatcher: fastDispatch, http: { metricsToken: Option.some(Redacted.make("metrics-secret")) } })
    fake = await FakeComfyUI.start()
  })
  afterAll(async () => {
    await fake.close()
    await server.close()
  })

  const scrape = async () => {
    const res = await server.fetch("/metrics", { headers: { authorization: "Bearer metrics-secret" } })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("text/plain; version=0.0.4")
    return res.text()
  }

  it("counts a workflow's creation and end, its queue wait and run time, and the HTTP answers by route", async () => {
    const before = await scrape()
    const u = await server.user("pro")
    expect((await server.fetch("/v1/runner", json({ name: "r", endpoint: fake.url }, u.auth))).status).toBe(201)
    const created = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "m" }, saveImageWorkflow({})) })
    expect(created.status).toBe(201)
    const { id } = await readJson<{ id: string }>(created)
    let w: WorkflowDetailJson
    const deadline = Date.now() + 15_000
    do {
      await new Promise((r) => setTimeout(r, 50))
      w = await readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${id}`, { headers: u.auth }))
    } while (w.status !== "completed" && Date.now() < deadline)
    expect(w.status).toBe("completed")
    // The detail says how long it waited and ran.
    expect(w.queue_ms).toEqual(expect.any(Number))
    expect(w.run_ms).toEqual(expect.any(Number))
    expect(w.queue_ms! + w.run_ms!).toBeLessThanOrEqual(Date.parse(w.completed_at!) - Date.parse(w.created_at))

    // An event stream, followed to its end.
    expect(await (await server.fetch(`/v1/workflow/${id}/subscribe`, { headers: u.auth })).text()).toContain("event: done")
    const after = await scrape()
    const delta = (series: string) => (valueOf(after, series) ?? 0) - (valueOf(before, series) ?? 0)
    expect(delta("wes_workflows_created_total")).toBe(1)
    expect(delta("wes_workflows_finished_total{outcome=\"completed\",runner_kind=\"user\"}")).toBe(1)
    expect(delta("wes_workflow_queue_seconds_count")).toBe(1)
    expect(delta("wes_workflow_run_seconds_count")).toBe(1)
    expect(delta("wes_http_requests_total{route=\"/v1/workflow\",status=\"201\"}")).toBe(1)
    expect(delta("wes_http_requests_total{route=\"/v1/workflow/:id\",status=\"200\"}")).toBeGreaterThanOrEqual(1)
    expect(after).toMatch(/^# TYPE wes_http_request_duration_seconds histogram$/m)
    expect(after).toMatch(/^wes_http_request_duration_seconds_bucket\{route="\/v1\/runner",le="\+Inf"\} \d+$/m)
    expect(after).toMatch(/^# TYPE wes_sse_subscribers gauge$/m)
    // The runner side: one prompt posted, its output copied, the runner's WebSocket connected.
    expect(delta("wes_dispatch_attempts_total{result=\"submitted\"}")).toBe(1)
    expect(delta("wes_output_transfer_seconds_count")).toBeGreaterThanOrEqual(1)
    expect(valueOf(after, "wes_runners_connected{runner_kind=\"user\"}")).toBeGreaterThanOrEqual(1)
    // No ids in labels: an unknown path is "other".
    await server.fetch(`/nothing/${id}`)
    expect(await scrape()).not.toContain(id)
  }, 30_000)

  it("asks for the metrics token when one is set", async () => {
    expect((await server.fetch("/metrics")).status).toBe(401)
    expect((await server.fetch("/metrics", { headers: { authorization: "Bearer wrong" } })).status).toBe(401)
  })
})
