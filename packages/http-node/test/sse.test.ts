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
    const reading = readEvents(res)
    await new Promise((r) => setTimeout(r, 250))
    await server.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })
    const events = (await reading).filter((e) => e.event !== undefined)
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
    const reading = readEvents(res)
    await new Promise((r) => setTimeout(r, 250))
    await server.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })
    const events = (await reading).filter((e) => e.event !== undefined)
    expect(events.map((e) => [e.id, e.event])).toEqual([["1", "status"], ["2", "status"], ["3", "done"]])
  })

  it("gives many subscribers every event, in order", async () => {
    const { u, w } = await setup()
    let connected = 0
    let allConnected!: () => void
    const ready = new Promise<void>((resolve) => (allConnected = resolve))
    // Each subscriber counts as connected once its first event (the current status) arrived.
    const streams = Array.from({ length: 20 }, async () => {
      let counted = false
      return readEvents(await server.fetch(`/v1/workflow/${w.id}/subscribe`, { headers: u.auth }), (events) => {
        if (!counted && events.length > 0) {
          counted = true
          if (++connected === 20) allConnected()
        }
        return false
      })
    })
    await ready
    await server.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })
    for (const events of await Promise.all(streams)) {
      expect(events.filter((e) => e.event).map((e) => [e.id, e.event])).toEqual([["1", "status"], ["2", "status"], ["3", "done"]])
    }
  })
})
