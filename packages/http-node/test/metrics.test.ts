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
import { poll } from "./polling.js"
import { seriesValue, workGauges } from "./prometheus.js"

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
    let status = ""
    const w = await poll(() => `workflow ${id} to complete (is ${status})`, async () => {
      const d = await readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${id}`, { headers: u.auth }))
      status = d.status
      return d.status === "completed" ? d : undefined
    })
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
    // By result and the runner's ComfyUI version (the fake's 0.3.64).
    const posted = (text: string) => seriesValue(text, "wes_dispatch_attempts_total", { result: "submitted", comfyui_version: "0.3.64" }) ?? 0
    expect(posted(after) - posted(before)).toBe(1)
    expect(delta("wes_output_transfer_seconds_count")).toBeGreaterThanOrEqual(1)
    expect(valueOf(after, "wes_runners_connected{runner_kind=\"user\"}")).toBeGreaterThanOrEqual(1)
    // No ids in labels: an unknown path is "other".
    await server.fetch(`/nothing/${id}`)
    expect(await scrape()).not.toContain(id)
  }, 30_000)

  it("reports unfinished workflows by status and the prompts on each runner; a completed workflow's detail has transfer_ms", async () => {
    const held = await FakeComfyUI.start({ cache: false })
    try {
      held.hold()
      const u = await server.user("pro")
      const runner = await readJson<{ id: string }>(await server.fetch("/v1/runner", json({ name: "held", endpoint: held.url }, u.auth)))
      const ids: Array<string> = []
      for (const seed of [1, 2]) {
        const created = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: `g${seed}` }, saveImageWorkflow({ prefix: `gauges/${seed}` })) })
        expect(created.status).toBe(201)
        ids.push((await readJson<{ id: string }>(created)).id)
      }
      const detail = async (id: string) => readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${id}`, { headers: u.auth }))
      // One prompt runs (held), the other waits behind it on the runner.
      let last: unknown
      const expected = { accepted: 0, uploaded: 0, queued: 1, running: 1, in_flight: 2 }
      await poll(() => `gauges ${JSON.stringify(expected)}, last ${JSON.stringify(last)}`, async () => {
        last = workGauges(await scrape(), runner.id)
        return JSON.stringify(last) === JSON.stringify(expected) ? true : undefined
      })
      // Not known before the end.
      for (const id of ids) expect((await detail(id)).transfer_ms).toBeNull()

      held.release()
      for (const id of ids) {
        const w = await poll(() => `${id} to complete`, async () => {
          const d = await detail(id)
          return d.status === "completed" ? d : undefined
        })
        expect(Number.isInteger(w.transfer_ms)).toBe(true)
        expect(w.transfer_ms).toBeGreaterThanOrEqual(0)
        const { outputs } = await readJson<{ outputs: ReadonlyArray<unknown> }>(await server.fetch(`/v1/workflow/${id}/outputs`, { headers: u.auth }))
        expect(outputs.length).toBeGreaterThanOrEqual(1)
      }
      const done = { accepted: 0, uploaded: 0, queued: 0, running: 0, in_flight: 0 }
      await poll(() => `gauges ${JSON.stringify(done)}, last ${JSON.stringify(last)}`, async () => {
        last = workGauges(await scrape(), runner.id)
        return JSON.stringify(last) === JSON.stringify(done) ? true : undefined
      })
    } finally {
      await held.close()
    }
  }, 40_000)

  it("shows the process's resident memory, V8 heap and CPU time, as node counts them", async () => {
    const first = await scrape()
    const rss = valueOf(first, "process_resident_memory_bytes")!
    const now = process.memoryUsage()
    expect(rss).toBeGreaterThan(now.rss / 2)
    expect(rss).toBeLessThan(now.rss * 2)
    const used = valueOf(first, "nodejs_heap_size_used_bytes")!
    expect(used).toBeGreaterThan(0)
    expect(used).toBeLessThanOrEqual(valueOf(first, "nodejs_heap_size_total_bytes")!)
    expect(valueOf(first, "nodejs_external_memory_bytes")).toBeGreaterThan(0)
    expect(first).toMatch(/^# TYPE process_cpu_user_seconds_total counter$/m)
    expect(first).toMatch(/^# TYPE process_resident_memory_bytes gauge$/m)
    // 200 ms of CPU spent between two scrapes: the counter grows by at least that, and never
    // past what node has counted for the process since it started.
    const before = valueOf(first, "process_cpu_user_seconds_total")!
    const start = process.cpuUsage().user
    while (process.cpuUsage().user - start < 200_000) {
      // spending CPU
    }
    const after = valueOf(await scrape(), "process_cpu_user_seconds_total")!
    expect(after - before).toBeGreaterThanOrEqual(0.2 - 1e-9)
    expect(after).toBeLessThanOrEqual(process.cpuUsage().user / 1e6 + 1e-9)
  })

  it("asks for the metrics token when one is set", async () => {
    expect((await server.fetch("/metrics")).status).toBe(401)
    expect((await server.fetch("/metrics", { headers: { authorization: "Bearer wrong" } })).status).toBe(401)
  })
})
