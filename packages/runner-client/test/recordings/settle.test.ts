/**
 * The cancel scenario's interruption lands at node 2 or at node 3 of the chain depending on how
 * soon ComfyUI's thread reaches its check (both seen from an unmodified ComfyUI 0.3.64: node 3 in
 * the stored recording, node 2 on a loaded machine). Both must compare equal; anything else must not.
 */
import { describe, expect, it } from "vitest"
import type { Recording } from "./Recorder.js"
import { scenarios } from "./scenarios.js"
import { FAKE_VERSION, readRecording } from "./stored.js"

type Message = { readonly type: string; readonly data: Record<string, unknown> }

const cancel = scenarios.find((s) => s.name === "cancel")!
const stored = readRecording(FAKE_VERSION, "cancel")

/** The stored run as if the interrupt had been noticed at node `k` (nodes 1..k-1 executed). */
const interruptedAt = (k: number, executed: ReadonlyArray<string>): Recording => {
  const ws = stored.ws as ReadonlyArray<Message>
  const from = ws.findIndex((m) => m.type === "executing" && m.data["node"] === "2")
  const to = ws.findIndex((m) => m.type === "execution_interrupted")
  const at = (d: Record<string, unknown>) => ({ ...d, node_id: String(k), executed })
  return {
    ...stored,
    // What ComfyUI sends of the nodes between is timing too: none of it here.
    ws: ws.filter((m, i) => !(i > from && i < to && m.type !== "status")).map((m) => m.type === "execution_interrupted" ? { ...m, data: at(m.data) } : m),
    // The history's copy of the interruption says the same.
    http: stored.http.map((e) => {
      if (e.request !== "GET /history/<running>") return e
      const entry = (e.answer as Record<string, { status: { messages: Array<[string, Record<string, unknown>]> } }>)["<running>"]!
      const messages = entry.status.messages.map(([type, data]) => [type, type === "execution_interrupted" ? at(data) : data])
      return { ...e, answer: { "<running>": { ...entry, status: { ...entry.status, messages } } } }
    })
  }
}

describe("the cancel scenario, settled", () => {
  it("stores an interruption at node 3 after nodes 1 and 2", () => {
    const interrupted = (stored.ws as ReadonlyArray<Message>).find((m) => m.type === "execution_interrupted")!
    expect([interrupted.data["node_id"], interrupted.data["executed"]]).toEqual(["3", ["1", "2"]])
  })

  it("an interruption noticed at node 2 compares equal to the stored one", () => {
    const earlier = interruptedAt(2, ["1"])
    expect(earlier.ws).not.toEqual(stored.ws)
    expect(earlier.http).not.toEqual(stored.http)
    expect(cancel.settle!(earlier)).toEqual(cancel.settle!(stored))
  })

  it("an interruption that does not follow the chain (node 3 with node 2 not executed) still differs", () => {
    expect(cancel.settle!(interruptedAt(3, ["1"]))).not.toEqual(cancel.settle!(stored))
  })
})
