import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { json, readJson, startServer, type TestServer, workflowForm, type WorkflowSummaryJson } from "./harness.js"

interface SseEvent {
  readonly id?: string
  readonly event?: string
  readonly data?: string
  readonly comment?: string
}

/** Reads server-sent events until the stream ends or `until` says stop. */
const readEvents = async (res: Response, until: (events: ReadonlyArray<SseEvent>) => boolean = () => false) => {
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  const events: Array<SseEvent> = []
  let buffer = ""
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    buffer += decoder.decode(value, { stream: true })
    let end: number
    while ((end = buffer.indexOf("\n\n")) !== -1) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const event: Record<string, string> = {}
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) event["comment"] = line.slice(1).trim()
        else {
          const i = line.indexOf(":")
          event[line.slice(0, i)] = line.slice(i + 1).trim()
        }
      }
      events.push(event)
    }
    if (until(events)) {
      await reader.cancel()
      break
    }
  }
  return events
}

/**
 * Reads a stream in the background: `connected` once its first event (the current status) came,
 * when the server follows the workflow for it; `events` once the stream ended.
 */
const follow = (res: Response) => {
  let connected!: () => void
  const first = new Promise<void>((resolve) => (connected = resolve))
  const events = readEvents(res, (es) => {
    if (es.length > 0) connected()
    return false
  })
  // A stream that ends without an event: the assertions on its events say so.
  void events.then(() => connected(), () => connected())
  return { connected: first, events }
}

describe("SSE", () => {
  let server: TestServer
  beforeAll(async () => { server = await startServer({ http: { sseKeepAlive: "100 millis" } }) })
  afterAll(async () => { await server.close() })

  const setup = async () => {
    const u = await server.user()
    await server.fetch("/v1/runner", json({ name: "r", endpoint: "http://127.0.0.1:8188" }, u.auth))
    const w = await readJson<WorkflowSummaryJson>(await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "s" }) }))
    return { u, w }
  }

  it("sends the current status first, then events as they happen, done, and ends", async () => {
    const { u, w } = await setup()
    const res = await server.fetch(`/v1/workflow/${w.id}/subscribe`, { headers: u.auth })
    expect(res.headers.get("content-type")).toContain("text/event-stream")
    const stream = follow(res)
    await stream.connected
    await server.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })
    const events = (await stream.events).filter((e) => e.event !== undefined)
    expect(events.map((e) => [e.id, e.event, JSON.parse(e.data!).status])).toEqual([
      ["1", "status", "accepted"],
      ["2", "status", "cancelled"],
      ["3", "done", "cancelled"]
    ])
    expect(Object.keys(JSON.parse(events[0]!.data!)).sort()).toEqual(["completed_at", "created_at", "id", "name", "started_at", "status", "tags", "updated_at"])
  })

  it("sends keep-alive comments while nothing happens", async () => {
    const { u, w } = await setup()
    const res = await server.fetch(`/v1/workflow/${w.id}/subscribe`, { headers: u.auth })
    const events = await readEvents(res, (es) => es.filter((e) => e.comment === "keep-alive").length >= 2)
    expect(events[0]!.event).toBe("status")
    expect(events.filter((e) => e.comment === "keep-alive").length).toBeGreaterThanOrEqual(2)
  })

  it("replays after Last-Event-ID, and answers a finished workflow with status and done", async () => {
    const { u, w } = await setup()
    await server.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })
    const finished = await readEvents(await server.fetch(`/v1/workflow/${w.id}/subscribe`, { headers: u.auth }))
    expect(finished.filter((e) => e.event).map((e) => [e.id, e.event])).toEqual([["3", "status"], ["3", "done"]])
    const bad = await server.fetch(`/v1/workflow/${w.id}/subscribe`, { headers: { ...u.auth, "last-event-id": "x" } })
    expect(bad.status).toBe(400)
  })

  it("reads a Last-Event-ID beyond the latest event as up to date, and still ends with done", async () => {
    const { u, w } = await setup()
    const res = await server.fetch(`/v1/workflow/${w.id}/subscribe`, { headers: { ...u.auth, "last-event-id": "999" } })
    const stream = follow(res)
    await stream.connected
    await server.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })
    const events = (await stream.events).filter((e) => e.event !== undefined)
    expect(events.map((e) => [e.id, e.event])).toEqual([["1", "status"], ["2", "status"], ["3", "done"]])
  })

  it("gives many subscribers every event, in order", async () => {
    const { u, w } = await setup()
    const streams = await Promise.all(Array.from({ length: 20 }, async () => follow(await server.fetch(`/v1/workflow/${w.id}/subscribe`, { headers: u.auth }))))
    await Promise.all(streams.map((s) => s.connected))
    await server.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })
    for (const events of await Promise.all(streams.map((s) => s.events))) {
      expect(events.filter((e) => e.event).map((e) => [e.id, e.event])).toEqual([["1", "status"], ["2", "status"], ["3", "done"]])
    }
  })
})
