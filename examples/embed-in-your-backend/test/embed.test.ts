/**
 * The example against a fake ComfyUI: the node:http service creates a swatch and serves its PNG
 * once the workflow has completed, and the promise facade does the same from async/await code.
 */
import { FakeComfyUI, inspectImage } from "@wes/runner-client/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { generateSwatch } from "../facade.js"
import { type Backend, startBackend } from "../server.js"

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

let fake: FakeComfyUI
beforeAll(async () => {
  fake = await FakeComfyUI.start()
})
afterAll(() => fake.close())

describe("the node:http service", () => {
  let backend: Backend
  const logs: Array<string> = []
  beforeAll(async () => {
    backend = await startBackend({ comfyuiUrl: fake.url, log: (line) => logs.push(line) })
  })
  afterAll(() => backend.close())

  it("creates a swatch workflow and serves its PNG once it has completed", async () => {
    const created = await fetch(`${backend.url}/swatches`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ color: "#ff8800", size: 48 })
    })
    expect(created.status).toBe(202)
    const { id, image, status } = await created.json() as { id: string; image: string; status: string }
    expect(status).toBe("accepted")

    const png = await fetch(backend.url + image)
    expect(png.status).toBe(200)
    expect(png.headers.get("content-type")).toBe("image/png")
    const bytes = Buffer.from(await png.arrayBuffer())
    expect(bytes.subarray(0, 8)).toEqual(PNG_SIGNATURE)
    expect(inspectImage(bytes)).toMatchObject({ format: "PNG", width: 48, height: 48, color: 0xff8800 })
    expect(await (await fetch(`${backend.url}/swatches/${id}`)).json()).toEqual({ id, status: "completed", error: null })
    // The route followed the workflow's events to the end.
    expect(logs.filter((l) => l.startsWith(`swatch ${id}: `)).at(-1)).toContain("done")
    // What reached ComfyUI: the parameters substituted into the team's workflow, as the INTs EmptyImage declares.
    const body = fake.submissions.at(-1)?.body as { prompt: Record<string, { inputs: Record<string, unknown> }> }
    expect(body.prompt["1"]!.inputs).toMatchObject({ width: 48, height: 48, color: 0xff8800 })
  })

  it("answers WES's typed errors with HTTP statuses", async () => {
    const bad = await fetch(`${backend.url}/swatches`, { method: "POST", body: JSON.stringify({ color: "orange" }) })
    expect(bad.status).toBe(400)
    const missing = await fetch(`${backend.url}/swatches/${crypto.randomUUID()}`)
    expect(missing.status).toBe(404)
    expect(await missing.json()).toEqual({ error: "Workflow not found" })
  })
})

describe("the promise facade", () => {
  it("runs the same workflow from async/await code", async () => {
    const events: Array<string> = []
    const { file, workflow } = await generateSwatch({ comfyuiUrl: fake.url, color: 0x0080ff, size: 32, onEvent: (e) => events.push(e.type) })
    expect(workflow.status).toBe("completed")
    expect(events[0]).toBe("status")
    expect(events.at(-1)).toBe("done")
    expect(events).toContain("output")
    expect(file.content_type).toBe("image/png")
    expect(inspectImage(Buffer.from(file.bytes))).toMatchObject({ format: "PNG", width: 32, height: 32, color: 0x0080ff })
  })
})
