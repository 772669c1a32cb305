/** The fake's WebSocket: handshake, message order for a prompt, routing, binary previews, reconnects. */
import { saveImageWorkflow, slowWorkflow } from "@wes/runner-client/testing"
import { describe, expect, it } from "vitest"
import { http, useFake, uuid, WsClient } from "./harness.js"

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47])

describe("fake ComfyUI: WebSocket", () => {
  it("greets with status and the sid (clientId, or 32 hex characters without one), also on /api/ws", async () => {
    const fake = await useFake()
    const named = await WsClient.connect(fake.wsUrl("client-a"))
    await named.waitForType("status")
    expect(named.messages[0]).toEqual({ type: "status", data: { status: { exec_info: { queue_remaining: 0 } }, sid: "client-a" } })

    const anonymous = await WsClient.connect(`ws://127.0.0.1:${fake.port}/ws`)
    await anonymous.waitForType("status")
    expect(anonymous.messages[0]!.data.sid).toMatch(/^[0-9a-f]{32}$/)

    const api = await WsClient.connect(`ws://127.0.0.1:${fake.port}/api/ws?clientId=via-api`)
    await api.waitForType("status")
    expect(api.messages[0]!.data.sid).toBe("via-api")
  })

  it("answers feature_flags only when it is the client's first message", async () => {
    const fake = await useFake()
    const first = await WsClient.connect(fake.wsUrl("f1"))
    first.send({ type: "feature_flags", data: { supports_preview_metadata: true } })
    await first.waitForType("feature_flags")
    expect(first.messages.find((m) => m.type === "feature_flags")!.data).toEqual({
      supports_preview_metadata: true,
      max_upload_size: 100 * 1024 * 1024
    })

    const late = await WsClient.connect(fake.wsUrl("f2"))
    late.send({ type: "hello", data: {} })
    late.send({ type: "feature_flags", data: {} })
    await late.flush()
    expect(late.types).not.toContain("feature_flags")
  })

  it("sends one prompt's messages in ComfyUI's order", async () => {
    const fake = await useFake()
    const ws = await WsClient.connect(fake.wsUrl("c1"))
    await ws.waitForType("status")
    const id = uuid()
    await http(fake).post("/prompt", { prompt: saveImageWorkflow({ prefix: "order/run" }), prompt_id: id, client_id: "c1" })
    await ws.waitForType("executing", (m) => m.data.node === null)
    await ws.flush()

    expect(ws.types).toEqual([
      "status", // on connect
      "status", // queued
      "status", // taken by the worker
      "execution_start",
      "execution_cached",
      "progress_state", "executing", "progress_state", // node 1
      "progress_state", "executing", "progress_state", // node 2
      "progress_state", "executing", "executed", "progress_state", // node 3 (has UI)
      "execution_success",
      "status", // done: history written
      "executing" // node: null
    ])
    const m = ws.messages
    expect(m.slice(1, 3).map((x) => x.data)).toEqual([
      { status: { exec_info: { queue_remaining: 1 } } },
      { status: { exec_info: { queue_remaining: 1 } } }
    ])
    expect(m[3]!.data).toEqual({ prompt_id: id, timestamp: expect.any(Number) })
    expect(m[4]!.data).toEqual({ nodes: [], prompt_id: id, timestamp: expect.any(Number) })
    expect(m[5]!.data).toEqual({
      prompt_id: id,
      nodes: {
        "1": { value: 0, max: 1, state: "running", node_id: "1", prompt_id: id, display_node_id: "1", parent_node_id: null, real_node_id: "1" }
      }
    })
    expect(m[6]!.data).toEqual({ node: "1", display_node: "1", prompt_id: id })
    expect(m[13]!.data).toEqual({
      node: "3",
      display_node: "3",
      output: { images: [{ filename: "run_00001_.png", subfolder: "order", type: "output" }] },
      prompt_id: id
    })
    expect(m[15]!.data).toEqual({ prompt_id: id, timestamp: expect.any(Number) })
    expect(m[16]!.data).toEqual({ status: { exec_info: { queue_remaining: 0 } } })
    expect(m[17]!.data).toEqual({ node: null, prompt_id: id })
  })

  it("routes a prompt's events only to its client; others see status broadcasts", async () => {
    const fake = await useFake()
    const a = await WsClient.connect(fake.wsUrl("a"))
    const b = await WsClient.connect(fake.wsUrl("b"))
    await Promise.all([a.waitForType("status"), b.waitForType("status")])
    const id = uuid()
    await http(fake).post("/prompt", { prompt: saveImageWorkflow(), prompt_id: id, client_id: "a" })
    await a.waitForType("executing", (m) => m.data.node === null)
    await b.flush()
    expect(a.types).toContain("execution_success")
    expect(b.types).toEqual(["status", "status", "status", "status"])
  })

  it("sends nothing targeted for a prompt without client_id, but broadcasts progress_state", async () => {
    const fake = await useFake()
    const a = await WsClient.connect(fake.wsUrl("a"))
    const b = await WsClient.connect(fake.wsUrl("b"))
    const id = uuid()
    await http(fake).post("/prompt", { prompt: saveImageWorkflow(), prompt_id: id })
    await fake.whenFinished(id)
    await Promise.all([a.flush(), b.flush()])
    for (const c of [a, b]) {
      expect(new Set(c.types)).toEqual(new Set(["status", "progress_state"]))
      expect(c.types.filter((t) => t === "progress_state")).toHaveLength(6)
    }
  })

  it("broadcasts execution_interrupted of a prompt without client_id, and sends it only to C otherwise", async () => {
    const fake = await useFake()
    fake.hold()
    const a = await WsClient.connect(fake.wsUrl("a"))
    const b = await WsClient.connect(fake.wsUrl("b"))
    const anonymous = uuid()
    await http(fake).post("/prompt", { prompt: saveImageWorkflow(), prompt_id: anonymous })
    await fake.whenRunning(anonymous)
    await http(fake).post("/interrupt", {})
    await Promise.all([a.waitForType("execution_interrupted"), b.waitForType("execution_interrupted")])

    const owned = uuid()
    await http(fake).post("/prompt", { prompt: saveImageWorkflow({ prefix: "o" }), prompt_id: owned, client_id: "a" })
    await fake.whenRunning(owned)
    await http(fake).post("/interrupt", { prompt_id: owned })
    await a.waitForType("execution_interrupted", (m) => m.data.prompt_id === owned)
    await a.waitForType("executing", (m) => m.data.node === null && m.data.prompt_id === owned)
    await b.flush()
    expect(b.messages.filter((m) => m.type === "execution_interrupted").map((m) => m.data.prompt_id)).toEqual([anonymous])
  })

  it("sends binary previews: type 1 (format PNG) by default, type 4 with metadata to clients that negotiated it", async () => {
    const fake = await useFake({ previews: true })
    const legacy = await WsClient.connect(fake.wsUrl("legacy"))
    const modern = await WsClient.connect(fake.wsUrl("modern"))
    modern.send({ type: "feature_flags", data: { supports_preview_metadata: true } })
    await modern.waitForType("feature_flags")

    const one = uuid()
    await http(fake).post("/prompt", { prompt: slowWorkflow({ seconds: 0.03, steps: 3 }), prompt_id: one, client_id: "legacy" })
    await legacy.waitForType("executing", (m) => m.data.node === null)
    expect(legacy.binary).toHaveLength(3)
    for (const frame of legacy.binary) {
      expect(frame.readUInt32BE(0)).toBe(1)
      expect(frame.readUInt32BE(4)).toBe(2)
      expect(frame.subarray(8, 12)).toEqual(PNG_SIGNATURE)
    }
    expect(legacy.types.filter((t) => t === "progress")).toHaveLength(3)
    expect(modern.binary).toHaveLength(0)

    const four = uuid()
    await http(fake).post("/prompt", { prompt: slowWorkflow({ seconds: 0.031, steps: 3, prefix: "m" }), prompt_id: four, client_id: "modern" })
    await modern.waitForType("executing", (m) => m.data.node === null)
    expect(modern.binary).toHaveLength(3)
    const frame = modern.binary[0]!
    expect(frame.readUInt32BE(0)).toBe(4)
    const len = frame.readUInt32BE(4)
    expect(JSON.parse(frame.subarray(8, 8 + len).toString())).toEqual({
      node_id: "2", prompt_id: four, display_node_id: "2", parent_node_id: null, real_node_id: "2", image_type: "image/png"
    })
    expect(frame.subarray(8 + len, 12 + len)).toEqual(PNG_SIGNATURE)
  })

  it("sends SaveImageWebsocket images as binary frames with progress, and never caches it", async () => {
    const fake = await useFake()
    const ws = await WsClient.connect(fake.wsUrl("c"))
    const prompt = {
      "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 2, color: 0 } },
      "2": { class_type: "SaveImageWebsocket", inputs: { images: ["1", 0] } }
    }
    for (let i = 0; i < 2; i++) {
      const id = uuid()
      await http(fake).post("/prompt", { prompt, prompt_id: id, client_id: "c" })
      await ws.waitForType("executing", (m) => m.data.node === null && m.data.prompt_id === id)
    }
    expect(ws.binary).toHaveLength(4)
    expect(ws.messages.filter((m) => m.type === "progress").map((m) => [m.data.value, m.data.max])).toEqual([[0, 2], [1, 2], [0, 2], [1, 2]])
  })

  it("tells a reconnecting client which node is executing (without prompt_id), and replays nothing", async () => {
    const fake = await useFake()
    fake.hold()
    const first = await WsClient.connect(fake.wsUrl("c1"))
    const id = uuid()
    await http(fake).post("/prompt", { prompt: saveImageWorkflow(), prompt_id: id, client_id: "c1" })
    await first.waitForType("executing")
    await first.close()

    const again = await WsClient.connect(fake.wsUrl("c1"))
    await again.waitFor((c) => c.messages.length >= 2)
    expect(again.messages.slice(0, 2)).toEqual([
      { type: "status", data: { status: { exec_info: { queue_remaining: 1 } }, sid: "c1" } },
      { type: "executing", data: { node: "1" } }
    ])
    fake.release()
    await again.waitForType("executing", (m) => m.data.node === null)
    expect(again.types).not.toContain("execution_start")
    expect(again.types).toContain("execution_success")
  })

  it("drops events for a client that is not connected", async () => {
    const fake = await useFake()
    const id = uuid()
    await http(fake).post("/prompt", { prompt: saveImageWorkflow(), prompt_id: id, client_id: "away" })
    await fake.whenFinished(id)
    const late = await WsClient.connect(fake.wsUrl("away"))
    await late.flush()
    expect(late.types).toEqual(["status"])
  })

  it("unregisters a newer socket of the same clientId when the older one closes, as ComfyUI does", async () => {
    const fake = await useFake()
    const old = await WsClient.connect(fake.wsUrl("dup"))
    const fresh = await WsClient.connect(fake.wsUrl("dup"))
    await fresh.waitForType("status")
    await old.close()
    await fake.waitUntil(() => !fake.connectedClients.includes("dup"), 5_000, "dup to be unregistered")
    const id = uuid()
    await http(fake).post("/prompt", { prompt: saveImageWorkflow(), prompt_id: id, client_id: "dup" })
    await fake.whenFinished(id)
    await fresh.flush()
    expect(fresh.types).toEqual(["status"])
  })

  it("stops answering pings on silenced sockets, and drops sockets abruptly on request", async () => {
    const fake = await useFake()
    const ws = await WsClient.connect(fake.wsUrl("s"))
    let pongs = 0
    ws.ws.on("pong", () => pongs++)
    await ws.flush()
    expect(pongs).toBe(1)
    fake.silenceWebSockets()
    ws.ws.ping()
    const id = uuid()
    await http(fake).post("/prompt", { prompt: saveImageWorkflow(), prompt_id: id })
    await fake.whenFinished(id)
    // The fake reads the close after the ping, and would have answered the ping before its close frame.
    await ws.close()
    expect(pongs).toBe(1)
    expect(ws.types).toEqual(["status"])

    const other = await WsClient.connect(fake.wsUrl("t"))
    const closed = new Promise<number>((resolve) => other.ws.once("close", (code) => resolve(code)))
    fake.dropWebSockets()
    expect(await closed).toBe(1006)
  })

  it("requires the configured proxy headers on the upgrade and logs them", async () => {
    const fake = await useFake({ requiredHeaders: { "x-api-key": "k" } })
    await expect(WsClient.connect(fake.wsUrl("h"))).rejects.toThrow(/401/)
    const ok = await WsClient.connect(fake.wsUrl("h"), { "X-Api-Key": "k" })
    await ok.waitForType("status")
    expect(fake.wsConnections.at(-1)).toMatchObject({ client_id: "h", headers: { "x-api-key": "k" } })
  })
})
