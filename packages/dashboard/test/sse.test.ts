/** The dashboard's reader of text/event-stream (the stream arrives in arbitrary chunks). */
import { describe, expect, it } from "vitest"
import { parseEvents } from "../src/sse.js"

describe("parseEvents", () => {
  it("reads id, event and JSON data, skips comments, and keeps an unfinished tail for the next chunk", () => {
    const text = 'id: 1\nevent: status\ndata: {"status":"queued"}\n\n: keep-alive\n\nid: 2\nevent: queue\ndata: {"queue_number":1}\n\nid: 3\nevent: progr'
    const { events, rest } = parseEvents(text)
    expect(events).toEqual([
      { id: 1, type: "status", data: { status: "queued" } },
      { id: 2, type: "queue", data: { queue_number: 1 } }
    ])
    expect(rest).toBe("id: 3\nevent: progr")
    expect(parseEvents(rest + 'ess\ndata: {"node":"2","value":1,"max":4}\n\n').events).toEqual([
      { id: 3, type: "progress", data: { node: "2", value: 1, max: 4 } }
    ])
  })

  it("ignores a block without data or id (a comment telling a slow client to reconnect)", () => {
    expect(parseEvents(": too slow: this stream ends here; reconnect with Last-Event-ID to resume\n\n")).toEqual({ events: [], previews: [], rest: "" })
  })

  it("reads a `preview` event (no id) as a preview, not as an event of the log", () => {
    const text = 'event: preview\ndata: {"node":"2","content_type":"image/jpeg","image":"AAEC"}\n\nid: 4\nevent: progress\ndata: {"node":"2","value":1,"max":4}\n\n'
    expect(parseEvents(text)).toEqual({
      events: [{ id: 4, type: "progress", data: { node: "2", value: 1, max: 4 } }],
      previews: [{ node: "2", content_type: "image/jpeg", image: "AAEC" }],
      rest: ""
    })
  })
})
