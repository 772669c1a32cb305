/** The fake's files (upload, view, SaveImage naming, LoadImage), caching, metadata routes and HTTP faults. */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { inspectImage, loadImageWorkflow, saveImageWorkflow, solidPng } from "@wes/runner-client/testing"
import { describe, expect, it } from "vitest"
import { http, useFake, uuid, WsClient } from "./harness.js"

type History = Record<string, { outputs: Record<string, { images: Array<{ filename: string; subfolder: string; type: string }> }> }>

const red = solidPng(4, 4, 0xff0000)
const blue = solidPng(4, 4, 0x0000ff)

describe("fake ComfyUI: POST /upload/image", () => {
  it("stores the file and answers {name, subfolder, type}", async () => {
    const fake = await useFake()
    const r = await http(fake).upload({ image: { name: "a.png", bytes: red }, subfolder: "wes" })
    expect(r.status).toBe(200)
    expect(r.json()).toEqual({ name: "a.png", subfolder: "wes", type: "input" })
    expect(await fs.readFile(path.join(fake.files.dir("input"), "wes", "a.png"))).toEqual(Buffer.from(red))
    expect(fake.uploads.map((u) => [u.name, u.subfolder, u.type, u.size, u.status])).toEqual([["a.png", "wes", "input", red.length, 200]])
  })

  it("reuses the name for identical content and renames different content to `name (n).ext`", async () => {
    const fake = await useFake()
    const api = http(fake)
    expect((await api.upload({ image: { name: "a.png", bytes: red } })).json<{ name: string }>().name).toBe("a.png")
    expect((await api.upload({ image: { name: "a.png", bytes: red } })).json<{ name: string }>().name).toBe("a.png")
    expect((await api.upload({ image: { name: "a.png", bytes: blue } })).json<{ name: string }>().name).toBe("a (1).png")
    expect((await api.upload({ image: { name: "a.png", bytes: blue } })).json<{ name: string }>().name).toBe("a (1).png")
    expect((await api.upload({ image: { name: "a.png", bytes: solidPng(4, 4, 0x00ff00) } })).json<{ name: string }>().name).toBe("a (2).png")
    expect(await fake.files.list("input")).toEqual(["a (1).png", "a (2).png", "a.png"])
  })

  it("overwrites with overwrite=true (or 1)", async () => {
    const fake = await useFake()
    const api = http(fake)
    await api.upload({ image: { name: "a.png", bytes: red } })
    expect((await api.upload({ image: { name: "a.png", bytes: blue }, overwrite: "true" })).json<{ name: string }>().name).toBe("a.png")
    expect(await fs.readFile(path.join(fake.files.dir("input"), "a.png"))).toEqual(Buffer.from(blue))
    expect(await fake.files.list("input")).toEqual(["a.png"])
  })

  it("answers 400 for a path escape or a missing image part, 500 for an unknown type", async () => {
    const fake = await useFake()
    const api = http(fake)
    expect((await api.upload({ image: { name: "a.png", bytes: red }, subfolder: "../../etc" })).status).toBe(400)
    expect((await api.upload({ image: { name: "a.png", bytes: red }, subfolder: "/tmp" })).status).toBe(400)
    expect((await api.upload({ subfolder: "x" })).status).toBe(400)
    expect((await api.upload({ image: { name: "a.png", bytes: red }, type: "models" })).status).toBe(500)
    expect((await api.upload({ image: { name: "t.png", bytes: red }, type: "temp" })).json()).toEqual({ name: "t.png", subfolder: "", type: "temp" })
  })
})

describe("fake ComfyUI: GET /view", () => {
  it("serves a file with its content type and Content-Disposition", async () => {
    const fake = await useFake()
    await http(fake).upload({ image: { name: "a.png", bytes: red }, subfolder: "sub" })
    const r = await fetch(`${fake.url}/view?filename=a.png&subfolder=sub&type=input`)
    expect(r.status).toBe(200)
    expect(r.headers.get("content-type")).toBe("image/png")
    expect(r.headers.get("content-disposition")).toBe("filename=\"a.png\"")
    expect(Buffer.from(await r.arrayBuffer())).toEqual(Buffer.from(red))

    const annotated = await fetch(`${fake.url}/view?${new URLSearchParams({ filename: "a.png [input]", subfolder: "sub" })}`)
    expect(annotated.status).toBe(200)
  })

  it("answers 404 without filename or for a missing file, 400 for a bad type or `..`, 403 for a subfolder escape", async () => {
    const fake = await useFake()
    await http(fake).upload({ image: { name: "a.png", bytes: red } })
    const status = async (q: Record<string, string>) => (await fetch(`${fake.url}/view?${new URLSearchParams(q)}`)).status
    expect(await status({})).toBe(404)
    expect(await status({ filename: "nope.png", type: "input" })).toBe(404)
    expect(await status({ filename: "a.png", type: "models" })).toBe(400)
    expect(await status({ filename: "../a.png", type: "input" })).toBe(400)
    expect(await status({ filename: "/etc/passwd", type: "input" })).toBe(400)
    expect(await status({ filename: "a.png", type: "input", subfolder: "../../" })).toBe(403)
    expect(await status({ filename: "a.png", type: "input" })).toBe(200)
  })

  it("serves scripts and markup as downloads", async () => {
    const fake = await useFake()
    await http(fake).upload({ image: { name: "x.html", bytes: new TextEncoder().encode("<script>") } })
    const r = await fetch(`${fake.url}/view?filename=x.html&type=input`)
    expect(r.headers.get("content-type")).toBe("application/octet-stream")
    expect(r.headers.get("content-disposition")).toBe("attachment; filename=\"x.html\"")
  })
})

describe("fake ComfyUI: nodes and caching", () => {
  it("SaveImage writes real PNGs as <prefix>_00001_.png and continues the counter", async () => {
    const fake = await useFake()
    const api = http(fake)
    const first = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "runs/img", width: 20, height: 10, color: 0x00ff00 }), prompt_id: first })
    await fake.whenFinished(first)
    const second = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "runs/img", width: 20, height: 10, color: 0x00ff00, batch: 2 }), prompt_id: second })
    await fake.whenFinished(second)

    expect(await fake.files.list("output")).toEqual(["runs/img_00001_.png", "runs/img_00002_.png", "runs/img_00003_.png"])
    const entry = (await api.get(`/history/${second}`)).json<History>()[second]!
    expect(entry.outputs["3"]!.images).toEqual([
      { filename: "img_00002_.png", subfolder: "runs", type: "output" },
      { filename: "img_00003_.png", subfolder: "runs", type: "output" }
    ])
    const png = await fs.readFile(path.join(fake.files.dir("output"), "runs", "img_00001_.png"))
    // ImageInvert turned green into magenta.
    expect(inspectImage(png)).toEqual({ format: "PNG", width: 20, height: 10, color: 0xff00ff })
  })

  it("SaveImage counts a file someone else wrote into the folder between two saves", async () => {
    const fake = await useFake()
    const api = http(fake)
    const first = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "runs/img" }), prompt_id: first })
    await fake.whenFinished(first)
    await fs.writeFile(path.join(fake.files.dir("output"), "runs", "img_00007_.png"), "")
    const second = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow({ prefix: "runs/img", color: 1 }), prompt_id: second })
    await fake.whenFinished(second)
    expect((await api.get(`/history/${second}`)).json<History>()[second]!.outputs["3"]!.images).toEqual([
      { filename: "img_00008_.png", subfolder: "runs", type: "output" }
    ])
  })

  it("re-emits cached outputs for an identical resubmission and writes no new file; cache: false re-runs", async () => {
    const fake = await useFake()
    const ws = await WsClient.connect(fake.wsUrl("c"))
    const api = http(fake)
    const a = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow(), prompt_id: a, client_id: "c" })
    await fake.whenFinished(a)
    const b = uuid()
    await api.post("/prompt", { prompt: saveImageWorkflow(), prompt_id: b, client_id: "c" })
    await fake.whenFinished(b)
    await ws.waitForType("executing", (m) => m.data.node === null && m.data.prompt_id === b)

    expect(await fake.files.list("output")).toEqual(["wes/run_00001_.png"])
    const ofB = ws.messages.filter((m) => m.data.prompt_id === b)
    expect(ofB.find((m) => m.type === "execution_cached")!.data.nodes).toEqual(["1", "2", "3"])
    expect(ofB.filter((m) => m.type === "executing" && m.data.node !== null)).toEqual([])
    expect(ofB.find((m) => m.type === "executed")!.data.output).toEqual({
      images: [{ filename: "run_00001_.png", subfolder: "wes", type: "output" }]
    })
    const entry = (await api.get(`/history/${b}`)).json<History>()[b]!
    expect(entry.outputs["3"]!.images[0]!.filename).toBe("run_00001_.png")

    const noCache = await useFake({ cache: false })
    for (let i = 0; i < 2; i++) {
      const id = uuid()
      await http(noCache).post("/prompt", { prompt: saveImageWorkflow(), prompt_id: id })
      await noCache.whenFinished(id)
    }
    expect(await noCache.files.list("output")).toEqual(["wes/run_00001_.png", "wes/run_00002_.png"])
  })

  it("keeps only what the last prompt used, and /free resets the cache", async () => {
    const fake = await useFake()
    const api = http(fake)
    const run = async (prefix: string) => {
      const id = uuid()
      await api.post("/prompt", { prompt: saveImageWorkflow({ prefix }), prompt_id: id })
      await fake.whenFinished(id)
    }
    await run("a")
    await run("b") // nodes 1 and 2 cached, SaveImage runs
    await run("a") // SaveImage "a" was evicted by the "b" prompt: runs again
    expect(await fake.files.list("output")).toEqual(["a_00001_.png", "a_00002_.png", "b_00001_.png"])
    await api.post("/free", { free_memory: true })
    await run("a")
    expect(await fake.files.list("output")).toHaveLength(4)
  })

  it("LoadImage reads an uploaded image from a subfolder", async () => {
    const fake = await useFake()
    const api = http(fake)
    await api.upload({ image: { name: "in.png", bytes: solidPng(6, 3, 0xff0000) }, subfolder: "wes" })
    const id = uuid()
    await api.post("/prompt", { prompt: loadImageWorkflow({ image: "wes/in.png", prefix: "loaded" }), prompt_id: id })
    await fake.whenFinished(id)
    const png = await fs.readFile(path.join(fake.files.dir("output"), "loaded_00001_.png"))
    expect(inspectImage(png)).toEqual({ format: "PNG", width: 6, height: 3, color: 0x00ffff })
  })

  it("PreviewImage writes to temp as ComfyUI_temp_xxxxx_00001_.png", async () => {
    const fake = await useFake()
    const id = uuid()
    await http(fake).post("/prompt", {
      prompt_id: id,
      prompt: {
        "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
        "2": { class_type: "PreviewImage", inputs: { images: ["1", 0] } }
      }
    })
    await fake.whenFinished(id)
    const image = (await http(fake).get(`/history/${id}`)).json<History>()[id]!.outputs["2"]!.images[0]!
    expect(image).toEqual({ filename: expect.stringMatching(/^ComfyUI_temp_[a-z]{5}_00001_\.png$/), subfolder: "", type: "temp" })
    expect((await fetch(`${fake.url}/view?filename=${image.filename}&type=temp`)).status).toBe(200)
  })
})

describe("fake ComfyUI: other routes and HTTP behaviour", () => {
  it("serves every route at /X and /api/X", async () => {
    const fake = await useFake()
    for (const p of ["/system_stats", "/queue", "/prompt", "/history", "/features", "/object_info/EmptyImage", "/embeddings", "/models"]) {
      const plain = await http(fake).get(p)
      const api = await http(fake).get(`/api${p}`)
      expect([p, plain.status]).toEqual([p, 200])
      expect(api.status).toBe(200)
    }
  })

  it("answers /system_stats, /features and /object_info like ComfyUI", async () => {
    const fake = await useFake({ version: "0.3.99" })
    const stats = (await http(fake).get("/system_stats")).json<{ system: Record<string, unknown>; devices: Array<unknown> }>()
    expect(stats.system.comfyui_version).toBe("0.3.99")
    expect(Object.keys(stats.system)).toEqual(expect.arrayContaining(["os", "ram_total", "ram_free", "python_version", "pytorch_version", "embedded_python", "argv"]))
    expect(stats.devices[0]).toMatchObject({ name: expect.any(String), type: expect.any(String), vram_total: expect.any(Number) })
    expect((await http(fake).get("/features")).json()).toEqual({ supports_preview_metadata: true, max_upload_size: 104857600 })
    expect((await http(fake).get("/object_info/NoSuchNode")).json()).toEqual({})
    const info = (await http(fake).get("/object_info/EmptyImage")).json<Record<string, Record<string, unknown>>>().EmptyImage!
    expect(info).toMatchObject({
      input: { required: { width: ["INT", { default: 512, min: 1, max: 16384, step: 1 }] } },
      input_order: { required: ["width", "height", "batch_size", "color"] },
      output: ["IMAGE"],
      output_is_list: [false],
      name: "EmptyImage",
      output_node: false
    })
    const all = (await http(fake).get("/object_info")).json()
    expect(Object.keys(all)).toEqual(expect.arrayContaining(["LoadImage", "SaveImage", "PreviewAny", "StringConcatenate", "PrimitiveInt"]))
    expect((await http(fake).get("/models/checkpoints")).json()).toEqual([])
    expect((await http(fake).get("/models/nope")).status).toBe(404)
  })

  it("answers 404 and 405 for unknown paths and methods, 403 for a loopback host with a foreign Origin", async () => {
    const fake = await useFake()
    expect((await http(fake).get("/nope")).status).toBe(404)
    expect((await http(fake).get("/interrupt")).status).toBe(405)
    expect((await http(fake).get("/queue", { origin: "http://evil.example" })).status).toBe(403)
    expect((await http(fake).get("/queue", { origin: "http://127.0.0.1:1234" })).status).toBe(200)
  })

  it("injects HTTP faults: a status for everything, slowness, and a required header (401)", async () => {
    const fake = await useFake()
    fake.failHttp(503)
    expect((await http(fake).get("/queue")).status).toBe(503)
    fake.failHttp()
    const r = await http(fake).get("/queue")
    expect([r.status, r.text]).toEqual([500, "500 Internal Server Error\n\nServer got itself in trouble"])
    fake.restoreHttp()
    fake.slowHttp(200)
    const started = Date.now()
    expect((await http(fake).get("/queue")).status).toBe(200)
    expect(Date.now() - started).toBeGreaterThanOrEqual(150)
    fake.restoreHttp()
    fake.requireHeaders({ authorization: "Bearer t" })
    expect((await http(fake).get("/queue")).status).toBe(401)
    expect((await http(fake).get("/queue", { Authorization: "Bearer t" })).status).toBe(200)
    expect(fake.requests.at(-1)).toMatchObject({ method: "GET", path: "/queue", headers: { authorization: "Bearer t" } })
  })

  it("refuses connections until told to accept them again, on the same port", async () => {
    const fake = await useFake()
    const ws = await WsClient.connect(fake.wsUrl("x"))
    const closed = new Promise((resolve) => ws.ws.once("close", resolve))
    await fake.refuseConnections()
    await closed
    await expect(fetch(`${fake.url}/queue`)).rejects.toThrow()
    await fake.acceptConnections()
    expect((await http(fake).get("/queue")).status).toBe(200)

    await fake.refuseConnections("reset")
    await expect(fetch(`${fake.url}/queue`)).rejects.toThrow()
    await fake.acceptConnections()
    expect((await http(fake).get("/queue")).status).toBe(200)
  })
})
