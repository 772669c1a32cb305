/** The fake's queue, history, interrupts, injected failures and restarts. */
import { layer } from "@effect/vitest"
import { FakeComfyUIServer, saveImageWorkflow, slowWorkflow, textWorkflow } from "@wes/runner-client/testing"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { http, useFake, uuid, WsClient } from "./harness.js"

type QueueItem = [number, string, Record<string, unknown>, Record<string, unknown>, Array<string>]
type Queue = { queue_running: Array<QueueItem>; queue_pending: Array<QueueItem> }
type History = Record<string, {
  prompt: QueueItem
  outputs: Record<string, Record<string, Array<unknown>>>
  status: { status_str: string; completed: boolean; messages: Array<[string, Record<string, unknown>]> }
  meta: Record<string, unknown>
}>

describe("fake ComfyUI: queue", () => {
  it("orders by priority: counter, front (negated counter), explicit number; pending is the raw heap", async () => {
    const fake = await useFake()
    fake.pauseQueue()
    const api = http(fake)
    const submit = async (extra: Record<string, unknown>) => {
      const id = uuid()
      const r = await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: id }), prompt_id: id, ...extra })
      return { id, number: r.json<{ number: number }>().number }
    }
    const a = await submit({}) // 0
    const b = await submit({}) // 1
    const c = await submit({ front: true }) // -2
    const d = await submit({ number: 0.5 }) // 0.5, counter not advanced
    const e = await submit({}) // 3
    expect([a.number, b.number, c.number, d.number, e.number]).toEqual([0, 1, -2, 0.5, 3])

    const q = (await api.get("/queue")).json<Queue>()
    expect(q.queue_running).toEqual([])
    expect(q.queue_pending.every((item) => item.length === 5)).toBe(true)
    // A valid binary min-heap on (number, prompt_id).
    const heap = q.queue_pending
    heap.forEach((item, i) => {
      for (const child of [2 * i + 1, 2 * i + 2]) if (child < heap.length) expect(item[0]).toBeLessThanOrEqual(heap[child]![0])
    })
    expect(fake.state.pending).toEqual([c.id, a.id, d.id, b.id, e.id])
    expect((await api.get("/prompt")).json()).toEqual({ exec_info: { queue_remaining: 5 } })

    fake.resumeQueue()
    await fake.whenFinished(e.id)
    expect(fake.state.history).toEqual([c.id, a.id, d.id, b.id, e.id])
  })

  it("deletes and clears pending items only, with empty 200 answers; deleted prompts never reach history", async () => {
    const fake = await useFake()
    fake.hold()
    const api = http(fake)
    const ids = [uuid(), uuid(), uuid(), uuid()]
    for (const id of ids) await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: id }), prompt_id: id })
    await fake.whenRunning(ids[0]!)

    const del = await api.post("/queue", { delete: [ids[1], "unknown-id"] })
    expect(del.status).toBe(200)
    expect(del.text).toBe("")
    expect(fake.state.pending).toEqual([ids[2], ids[3]])

    // Deleting the running prompt does nothing: /queue only touches pending items.
    await api.post("/queue", { delete: [ids[0]] })
    expect(fake.state.running).toBe(ids[0])

    expect((await api.post("/queue", { clear: true })).status).toBe(200)
    expect(fake.state.pending).toEqual([])
    expect(fake.state.running).toBe(ids[0])

    fake.release()
    await fake.whenFinished(ids[0]!)
    expect(fake.state.history).toEqual([ids[0]])
    expect((await api.get(`/history/${ids[1]}`)).json()).toEqual({})
  })

  it("interrupts only the running prompt named by prompt_id; the prompt ends as interrupted in history", async () => {
    const fake = await useFake()
    fake.hold()
    const api = http(fake)
    const running = uuid()
    const pending = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "r" }), prompt_id: running })
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "p" }), prompt_id: pending })
    await fake.whenRunning(running)

    const wrong = await api.post("/interrupt", { prompt_id: pending })
    expect(wrong.status).toBe(200)
    expect(wrong.text).toBe("")
    expect((await api.get(`/history/${running}`)).json()).toEqual({})

    await api.post("/interrupt", { prompt_id: running })
    await fake.whenFinished(running)
    const entry = (await api.get(`/history/${running}`)).json<History>()[running]!
    expect(entry.status.status_str).toBe("error")
    expect(entry.status.completed).toBe(false)
    expect(entry.status.messages.map(([t]) => t)).toEqual(["execution_start", "execution_cached", "execution_interrupted"])
    expect(entry.status.messages[2]![1]).toMatchObject({ prompt_id: running, node_id: "1", node_type: "EmptyImage", executed: [] })
    expect(entry.outputs).toEqual({})

    // The pending prompt was untouched and runs once released.
    fake.release()
    await fake.whenFinished(pending)
    const next = (await api.get(`/history/${pending}`)).json<History>()[pending]!
    expect(next.status.status_str).toBe("success")
  })

  it("ignores a global interrupt sent while idle: the flag resets when the next prompt starts", async () => {
    const fake = await useFake()
    const api = http(fake)
    expect((await api.post("/interrupt", "")).status).toBe(200)
    const id = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow(), prompt_id: id })
    await fake.whenFinished(id)
    expect((await api.get(`/history/${id}`)).json<History>()[id]!.status.status_str).toBe("success")
  })

  it("lands an interrupt at a progress step of a long node", async () => {
    const fake = await useFake()
    const api = http(fake)
    const watcher = await WsClient.connect(fake.wsUrl("watcher"))
    const id = uuid()
    await api.post("/prompt", { prompt: slowWorkflow({ seconds: 30, steps: 300 }), prompt_id: id })
    // progress_state is broadcast: the long node has reached its first progress step.
    await watcher.waitForType("progress_state", (m) => ((m.data.nodes as Record<string, { value: number }>)["2"]?.value ?? 0) >= 1)
    await api.post("/interrupt", {})
    await fake.whenFinished(id, 5_000)
    const messages = (await api.get(`/history/${id}`)).json<History>()[id]!.status.messages
    expect(messages.at(-1)![0]).toBe("execution_interrupted")
    expect(messages.at(-1)![1]).toMatchObject({ node_id: "2", node_type: "FakeSleep", executed: ["1"] })
  })

  it("records an injected node failure as execution_error with ComfyUI's fields", async () => {
    const fake = await useFake()
    fake.failNode({ classType: "ImageInvert", exceptionType: "torch.OutOfMemoryError", exceptionMessage: "out of memory", once: true })
    const api = http(fake)
    const id = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow(), prompt_id: id })
    await fake.whenFinished(id)
    const entry = (await api.get(`/history/${id}`)).json<History>()[id]!
    expect(entry.status).toMatchObject({ status_str: "error", completed: false })
    const [type, data] = entry.status.messages.at(-1)!
    expect(type).toBe("execution_error")
    expect(data).toMatchObject({
      prompt_id: id,
      node_id: "2",
      node_type: "ImageInvert",
      executed: ["1"],
      exception_type: "torch.OutOfMemoryError",
      exception_message: "out of memory\n",
      // Every node of the prompt, as ComfyUI 0.3.64 lists them (recordings/node-error).
      current_outputs: ["1", "2", "3"]
    })
    expect(Array.isArray(data.traceback)).toBe(true)
    expect(data.current_inputs).toHaveProperty("image")

    // `once`: the next run succeeds.
    const again = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "again" }), prompt_id: again })
    await fake.whenFinished(again)
    expect((await api.get(`/history/${again}`)).json<History>()[again]!.status.status_str).toBe("success")
  })

  it("delays the nodes of one prompt (or of all) with setExecutionDelay", async () => {
    const fake = await useFake()
    const api = http(fake)
    const slow = uuid()
    fake.setExecutionDelay(400, slow)
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "slow" }), prompt_id: slow })
    await fake.whenRunning(slow)
    expect((await api.get(`/history/${slow}`)).json()).toEqual({})
    expect((await api.get("/queue")).json<Queue>().queue_running.map((i) => i[1])).toEqual([slow])
    await fake.whenFinished(slow)
    const fast = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "fast" }), prompt_id: fast })
    await fake.whenFinished(fast)
    expect(fake.state.history).toEqual([slow, fast])
  })

  it("fails LoadImage on a file that is not an image, at execution time", async () => {
    const fake = await useFake()
    const api = http(fake)
    await api.upload({ image: { name: "junk.png", bytes: new TextEncoder().encode("not an image") } })
    const id = uuid()
    const r = await api.post("/prompt", {
      prompt_id: id,
      prompt: { "1": { class_type: "LoadImage", inputs: { image: "junk.png" } }, "2": { class_type: "PreviewImage", inputs: { images: ["1", 0] } } }
    })
    expect(r.status).toBe(200)
    await fake.whenFinished(id)
    const last = (await api.get(`/history/${id}`)).json<History>()[id]!.status.messages.at(-1)!
    expect(last[1]).toMatchObject({ node_id: "1", exception_type: "PIL.UnidentifiedImageError" })
  })
})

describe("fake ComfyUI: history", () => {
  it("is {} until the prompt finished, then the exact entry shape", async () => {
    const fake = await useFake()
    fake.hold()
    const api = http(fake)
    const id = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "shape/run" }), prompt_id: id, client_id: "c1", extra_data: { wes_workflow_id: id } })
    await fake.whenRunning(id)
    expect((await api.get(`/history/${id}`)).json()).toEqual({})
    fake.release()
    await fake.whenFinished(id)

    const body = (await api.get(`/history/${id}`)).json<History>()
    expect(Object.keys(body)).toEqual([id])
    const entry = body[id]!
    expect(Object.keys(entry)).toEqual(["prompt", "outputs", "status", "meta"])
    expect(entry.prompt).toHaveLength(5)
    expect(entry.prompt[0]).toBe(0)
    expect(entry.prompt[1]).toBe(id)
    expect(entry.prompt[2]).toEqual(saveImageWorkflow({ prefix: "shape/run" }))
    expect(entry.prompt[3]).toMatchObject({ client_id: "c1", wes_workflow_id: id })
    expect(entry.prompt[4]).toEqual(["3"])
    expect(entry.outputs).toEqual({ "3": { images: [{ filename: "run_00001_.png", subfolder: "shape", type: "output" }] } })
    expect(entry.status.status_str).toBe("success")
    expect(entry.status.completed).toBe(true)
    expect(entry.status.messages.map(([t]) => t)).toEqual(["execution_start", "execution_cached", "execution_success"])
    for (const [, data] of entry.status.messages) expect(data).toMatchObject({ prompt_id: id, timestamp: expect.any(Number) })
    expect(entry.meta).toEqual({ "3": { node_id: "3", display_node: "3", parent_node: null, real_node_id: "3" } })
  })

  it("lists text outputs of PreviewAny", async () => {
    const fake = await useFake()
    const id = uuid()
    await http(fake).post("/prompt", { prompt: textWorkflow("hello"), prompt_id: id })
    await fake.whenFinished(id)
    const entry = (await http(fake).get(`/history/${id}`)).json<History>()[id]!
    expect(entry.outputs).toEqual({ "2": { text: ["hello"] } })
  })

  it("pages with max_items and offset, deletes and clears; a non-integer max_items is a 500", async () => {
    const fake = await useFake()
    const api = http(fake)
    const ids: Array<string> = []
    for (let i = 0; i < 4; i++) {
      const id = uuid()
      ids.push(id)
      await api.post("/prompt", { prompt: textWorkflow(`t${i}`), prompt_id: id })
    }
    await fake.whenFinished(ids[3]!)
    expect(Object.keys((await api.get("/history")).json())).toEqual(ids)
    expect(Object.keys((await api.get("/history?max_items=2")).json())).toEqual(ids.slice(2))
    expect(Object.keys((await api.get("/history?max_items=2&offset=1")).json())).toEqual(ids.slice(1, 3))
    expect((await api.get("/history?max_items=x")).status).toBe(500)

    expect((await api.post("/history", { delete: [ids[0]] })).text).toBe("")
    expect(Object.keys((await api.get("/history")).json())).toEqual(ids.slice(1))
    await api.post("/history", { clear: true })
    expect((await api.get("/history")).json()).toEqual({})
  })

  it("keeps at most maxHistory + 1 entries, dropping the oldest", async () => {
    const fake = await useFake({ maxHistory: 2 })
    const api = http(fake)
    const ids: Array<string> = []
    for (let i = 0; i < 5; i++) {
      const id = uuid()
      ids.push(id)
      await api.post("/prompt", { prompt: textWorkflow(`n${i}`), prompt_id: id })
      await fake.whenFinished(id)
    }
    expect(fake.state.history).toEqual(ids.slice(2))
  })
})

describe("fake ComfyUI: restart", () => {
  it("loses queue, running prompt, history, counter and temp files, keeps output files", async () => {
    const fake = await useFake()
    const api = http(fake)
    const done = uuid()
    await api.post("/prompt", {
      prompt_id: done,
      prompt: { ...saveImageWorkflow({ prefix: "kept" }), "4": { class_type: "PreviewImage", inputs: { images: ["2", 0] } } }
    })
    await fake.whenFinished(done)
    expect(await fake.files.list("temp")).toHaveLength(1)
    fake.hold()
    const running = uuid()
    const pending = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "r" }), prompt_id: running })
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "p" }), prompt_id: pending })
    await fake.whenRunning(running)

    await fake.restart()
    fake.release()
    expect(fake.state).toEqual({ running: null, pending: [], history: [] })
    for (const id of [done, running, pending]) expect((await api.get(`/history/${id}`)).json()).toEqual({})
    expect((await api.get("/queue")).json()).toEqual({ queue_running: [], queue_pending: [] })
    expect(await fake.files.list("temp")).toEqual([])
    expect(await fake.files.list("output")).toEqual(["kept_00001_.png"])
    const after = await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "n" }) })
    expect(after.json<{ number: number }>().number).toBe(0)
  })

  it("refuses connections during the downtime and answers again afterwards on the same port", async () => {
    const fake = await useFake()
    // The fake stops listening before `restart` first awaits anything; 300 ms is its simulated downtime.
    const restarting = fake.restart({ downtimeMs: 300 })
    await expect(fetch(`${fake.url}/system_stats`)).rejects.toThrow()
    await restarting
    expect((await http(fake).get("/system_stats")).status).toBe(200)
  })
})

layer(FakeComfyUIServer.layer({ version: "0.3.60" }), { excludeTestServices: true })("FakeComfyUIServer layer", (it) => {
  it.effect("provides a listening fake for the block", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUIServer
      const stats = yield* Effect.promise(() => fetch(`${fake.url}/api/system_stats`).then((r) => r.json()))
      expect(stats).toMatchObject({ system: { comfyui_version: "0.3.60" } })
    }))
})
