/**
 * WES against an unmodified ComfyUI (0.3.64 and 0.3.45), as a user meets it: `wes serve` (memory
 * store) and one ComfyUI on the CPU, driven only over WES's HTTP API and checked on ComfyUI's own API:
 * parameters (a BOOLEAN set false and true), uploaded inputs (pixels checked), outputs of several
 * kinds (files, a video, images sent over the WebSocket by the bundled SaveImageWebsocket, loaded
 * with its whitelist flag), the SSE progress of a real run, cancel while queued and while running,
 * prompts ComfyUI rejects, a node that raises, and a runner registered under ComfyUI's `/api` prefix.
 */
import { RealComfyUI, solidPng, WEBSOCKET_IMAGE_SAVE } from "@wes/runner-client/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { json, readJson, workflowForm } from "../harness.js"
import { addRunner, createUser, createWorkflow, DATABASE_URL, type Instance, killAll, startInstance, subscribe, type TestUser } from "../instances.js"
import { poll } from "../polling.js"
import { blurChain, comfyHistory, comfyMessages, comfyQueue, detail, imageColours, onComfyUI, setup, SLOW, smoke, unique, waitStatus } from "./suite.js"

interface OutputJson {
  readonly id: string
  readonly node_id: string
  readonly filename: string
  readonly subfolder: string
  readonly type: string
  readonly content_type: string
  readonly size: number
}

describe.skipIf(setup === undefined)(onComfyUI("WES over its HTTP API on a real ComfyUI"), () => {
  let comfy: RealComfyUI
  let wes: Instance
  let user: TestUser

  beforeAll(async () => {
    ;[comfy, wes] = await Promise.all([
      RealComfyUI.start(setup!, { args: WEBSOCKET_IMAGE_SAVE }),
      startInstance("wes", DATABASE_URL, { WES_STORAGE: "memory" })
    ])
    user = await createUser(wes)
    await addRunner(wes, user, "comfyui", comfy.url)
  })
  afterAll(async () => {
    await killAll()
    await comfy?.close()
  })

  const outputsOf = async (id: string) =>
    (await readJson<{ outputs: Array<OutputJson> }>(await wes.fetch(`/v1/workflow/${id}/outputs`, { headers: user.auth }))).outputs

  const download = async (id: string, output: OutputJson) => {
    const res = await wes.fetch(`/v1/workflow/${id}/outputs/${output.id}`, { headers: user.auth })
    expect(res.status).toBe(200)
    return { type: res.headers.get("content-type"), bytes: new Uint8Array(await res.arrayBuffer()) }
  }

  it("passes $text and #choice parameters to ComfyUI", async () => {
    const { token, color } = unique()
    const w = await createWorkflow(wes, user, {
      "1": { class_type: "EmptyImage", inputs: { width: 32, height: 32, batch_size: 1, color } },
      "2": { class_type: "ImageScale", inputs: { image: ["1", 0], upscale_method: "#choice(method, nearest-exact, bilinear, lanczos)", width: 48, height: 40, crop: "disabled" } },
      "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "$text(prefix)" } }
    }, { $prefix: `${token}/text`, "#method": "lanczos" })
    expect((await waitStatus(wes, user, w.id)).status).toBe("completed")

    const prompt = (await comfyHistory(comfy, w.id))!["prompt"] as [number, string, Record<string, { inputs: Record<string, unknown> }>]
    expect(prompt[2]["2"]!.inputs["upscale_method"]).toBe("lanczos")
    expect(prompt[2]["3"]!.inputs["filename_prefix"]).toBe(`${token}/text`)
    const [output] = await outputsOf(w.id)
    expect(output).toMatchObject({ node_id: "3", filename: "text_00001_.png", subfolder: token, type: "output", content_type: "image/png" })
    const image = await imageColours(setup!, (await download(w.id, output!)).bytes)
    expect([image.width, image.height]).toEqual([48, 40])
  })

  it("sends a $text value for a BOOLEAN input as a boolean: false and true both take effect (ImageStitch.match_image_size)", async () => {
    const { token, color } = unique()
    // 64 x 64 beside 32 x 32: matched sizes scale the second to 64 x 64 (128 wide); unmatched pad it (96 wide).
    const stitch = {
      "1": { class_type: "EmptyImage", inputs: { width: 64, height: 64, batch_size: 1, color } },
      "2": { class_type: "EmptyImage", inputs: { width: 32, height: 32, batch_size: 1, color: color ^ 0xffffff } },
      "3": { class_type: "ImageStitch", inputs: { image1: ["1", 0], image2: ["2", 0], direction: "right", match_image_size: "$text(match)", spacing_width: 0, spacing_color: "white" } },
      "4": { class_type: "SaveImage", inputs: { images: ["3", 0], filename_prefix: `${token}/stitch` } }
    }
    for (const [match, width] of [["false", 96], ["true", 128]] as const) {
      const w = await createWorkflow(wes, user, stitch, { $match: match })
      expect((await waitStatus(wes, user, w.id)).status).toBe("completed")
      const prompt = (await comfyHistory(comfy, w.id))!["prompt"] as [number, string, Record<string, { inputs: Record<string, unknown> }>]
      expect(prompt[2]["3"]!.inputs["match_image_size"]).toBe(match === "true")
      const [output] = await outputsOf(w.id)
      const image = await imageColours(setup!, (await download(w.id, output!)).bytes)
      expect([image.width, image.height]).toEqual([width, 64])
    }
    // A value the BOOLEAN input does not take is refused at create, naming the parameter, the node and the type.
    const refused = await wes.fetch("/v1/workflow", { method: "POST", headers: user.auth, body: workflowForm({ name: "e2e", $match: "maybe" }, stitch) })
    expect(refused.status).toBe(400)
    expect((await readJson<{ message: string }>(refused)).message).toBe(
      'Parameter validation failed: $match "maybe" cannot fill node "3" (ImageStitch.match_image_size), which takes a BOOLEAN (true/false, yes/no or 1/0)'
    )
  })

  it("uploads a $file input that LoadImage reads: the ImageInvert output has the inverted pixels", async () => {
    const { token } = unique()
    const w = await createWorkflow(wes, user, {
      "1": { class_type: "LoadImage", inputs: { image: "$file(photo)" } },
      "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
      "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: `${token}/inverted` } }
    }, { $photo: [new Uint8Array(solidPng(16, 12, 0x336699)), `${token}.png`] as const })
    expect((await waitStatus(wes, user, w.id)).status).toBe("completed")

    const prompt = (await comfyHistory(comfy, w.id))!["prompt"] as [number, string, Record<string, { inputs: Record<string, unknown> }>]
    expect(prompt[2]["1"]!.inputs["image"]).toMatch(new RegExp(`^wes/${w.id}_.*${token}\\.png$`))
    const [output] = await outputsOf(w.id)
    const image = await imageColours(setup!, (await download(w.id, output!)).bytes)
    // 0x336699 inverted is 0xcc9966 on every one of the 16 x 12 pixels (ComfyUI's float images
    // truncate on the way back to 8 bits, so a channel may come out one lower).
    expect(image).toMatchObject({ format: "PNG", width: 16, height: 12 })
    expect(image.colours).toHaveLength(1)
    const [count, rgb] = image.colours[0]!
    expect(count).toBe(192)
    rgb.forEach((channel, i) => expect(Math.abs(channel - [0xcc, 0x99, 0x66][i]!)).toBeLessThanOrEqual(1))
  })

  it("copies outputs of several kinds (two images, an animated WEBP, temp previews), each downloadable with its content type", async () => {
    const { token, color } = unique()
    const w = await createWorkflow(wes, user, {
      "1": { class_type: "EmptyImage", inputs: { width: 32, height: 24, batch_size: 2, color } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: `${token}/still` } },
      "3": { class_type: "SaveAnimatedWEBP", inputs: { images: ["1", 0], filename_prefix: `${token}/anim`, fps: 4, lossless: true, quality: 80, method: "default" } },
      "4": { class_type: "PreviewImage", inputs: { images: ["1", 0] } }
    })
    expect((await waitStatus(wes, user, w.id)).status).toBe("completed")
    const outputs = await outputsOf(w.id)
    const kinds = outputs.map((o) => `${o.node_id} ${o.type} ${o.content_type} ${o.filename.replace(/_temp_[a-z]{5}_/, "_temp_*_")}`).sort()
    expect(kinds).toEqual([
      "2 output image/png still_00001_.png",
      "2 output image/png still_00002_.png",
      "3 output image/webp anim_00001_.webp",
      "4 temp image/png ComfyUI_temp_*_00001_.png",
      "4 temp image/png ComfyUI_temp_*_00002_.png"
    ])
    for (const o of outputs) {
      const file = await download(w.id, o)
      expect(file.type).toBe(o.content_type)
      expect(file.bytes.length).toBe(o.size)
      const image = await imageColours(setup!, file.bytes)
      expect(image).toMatchObject({ format: o.content_type === "image/webp" ? "WEBP" : "PNG", width: 32, height: 24 })
      expect(image.colours).toEqual([[32 * 24, [(color >> 16) & 0xff, (color >> 8) & 0xff, color & 0xff]]])
    }
  })

  it("keeps the images SaveImageWebsocket sends over the WebSocket (no file on the runner) as PNG outputs", async () => {
    const { color } = unique()
    const w = await createWorkflow(wes, user, {
      "1": { class_type: "EmptyImage", inputs: { width: 40, height: 24, batch_size: 2, color } },
      "2": { class_type: "SaveImageWebsocket", inputs: { images: ["1", 0] } }
    })
    expect((await waitStatus(wes, user, w.id)).status).toBe("completed")
    // ComfyUI's history lists nothing for the node: the images exist only as the frames WES kept.
    expect((await comfyHistory(comfy, w.id))!["outputs"]).toEqual({})
    const outputs = await outputsOf(w.id)
    expect(outputs.map((o) => [o.node_id, o.filename, o.type, o.content_type])).toEqual([
      ["2", "websocket_2_00001_.png", "websocket", "image/png"],
      ["2", "websocket_2_00002_.png", "websocket", "image/png"]
    ])
    for (const o of outputs) {
      const file = await download(w.id, o)
      expect(file.type).toBe("image/png")
      expect(file.bytes.length).toBe(o.size)
      const image = await imageColours(setup!, file.bytes)
      expect(image).toMatchObject({ format: "PNG", width: 40, height: 24 })
      expect(image.colours).toEqual([[40 * 24, [(color >> 16) & 0xff, (color >> 8) & 0xff, color & 0xff]]])
    }
  })

  it("keeps a SaveVideo output as video/mp4", async () => {
    const { token, color } = unique()
    const w = await createWorkflow(wes, user, {
      "1": { class_type: "EmptyImage", inputs: { width: 32, height: 32, batch_size: 3, color } },
      "2": { class_type: "CreateVideo", inputs: { images: ["1", 0], fps: 6 } },
      "3": { class_type: "SaveVideo", inputs: { video: ["2", 0], filename_prefix: `${token}/clip`, format: "auto", codec: "auto" } }
    })
    expect((await waitStatus(wes, user, w.id)).status).toBe("completed")
    const [output, ...more] = await outputsOf(w.id)
    expect(more).toEqual([])
    expect(output).toMatchObject({ node_id: "3", filename: "clip_00001_.mp4", subfolder: token, type: "output", content_type: "video/mp4" })
    const file = await download(w.id, output!)
    expect(file.type).toBe("video/mp4")
    expect(Buffer.from(file.bytes).toString("latin1", 4, 8)).toBe("ftyp")
  })

  it("serves a SaveWEBM video and an animated WEBP as a player asks: type, byte ranges, ETag, and all in one ZIP", async () => {
    const { token, color } = unique()
    const w = await createWorkflow(wes, user, {
      "1": { class_type: "EmptyImage", inputs: { width: 32, height: 32, batch_size: 4, color } },
      "2": { class_type: "SaveWEBM", inputs: { images: ["1", 0], filename_prefix: `${token}/clip`, codec: "vp9", fps: 6, crf: 32 } },
      "3": { class_type: "SaveAnimatedWEBP", inputs: { images: ["1", 0], filename_prefix: `${token}/anim`, fps: 6, lossless: false, quality: 80, method: "default" } }
    }, { name: "media e2e" })
    expect((await waitStatus(wes, user, w.id)).status).toBe("completed")
    const outputs = await outputsOf(w.id)
    expect(outputs.map((o) => [o.node_id, o.filename, o.content_type]).sort()).toEqual([
      ["2", "clip_00001_.webm", "video/webm"],
      ["3", "anim_00001_.webp", "image/webp"]
    ])
    const video = outputs.find((o) => o.node_id === "2")!
    const url = `/v1/workflow/${w.id}/outputs/${video.id}`
    const whole = await download(w.id, video)
    expect(whole.type).toBe("video/webm")
    // EBML's magic number opens a WebM file.
    const head = await wes.fetch(url, { headers: { ...user.auth, range: "bytes=0-3" } })
    expect([head.status, head.headers.get("content-range")]).toEqual([206, `bytes 0-3/${video.size}`])
    expect(Buffer.from(await head.arrayBuffer()).toString("hex")).toBe("1a45dfa3")
    const tail = await wes.fetch(url, { headers: { ...user.auth, range: "bytes=-10" } })
    expect(Buffer.from(await tail.arrayBuffer()).equals(Buffer.from(whole.bytes.subarray(video.size - 10)))).toBe(true)
    const etag = head.headers.get("etag")!
    expect((await wes.fetch(url, { headers: { ...user.auth, "if-none-match": etag } })).status).toBe(304)
    const zip = await wes.fetch(`/v1/workflow/${w.id}/outputs.zip`, { headers: user.auth })
    expect([zip.status, zip.headers.get("content-disposition")]).toEqual([200, "attachment; filename=\"media e2e-outputs.zip\""])
    const archive = Buffer.from(await zip.arrayBuffer())
    // Stored entries: each output's bytes appear as they are, under <subfolder>/<filename>.
    expect(archive.includes(Buffer.from(whole.bytes))).toBe(true)
    expect(archive.toString("latin1")).toContain(`${token}/clip_00001_.webm`)
    expect(archive.toString("latin1")).toContain(`${token}/anim_00001_.webp`)
  })

  it("streams the real run over SSE: statuses, executing per node with the overall percent, the output, done", async () => {
    const { token, color } = unique()
    const w = await createWorkflow(wes, user, smoke(color, `${token}/sse`))
    const stream = await subscribe(wes, user, w.id, "0")
    const events = await stream.ended
    const kinds = events.map((e) => e.event === "status" || e.event === "done" ? `${e.event}:${String(e.data["status"])}` : e.event)
    // The stream opens with the current status, then replays the log from the first event.
    expect(kinds.slice(1).filter((k) => k !== "queue")).toEqual([
      "status:accepted", "status:uploaded", "status:queued", "status:running",
      "executing", "executing", "executing", "output", "status:completed", "done:completed"
    ])
    expect(events.filter((e) => e.event === "executing").map((e) => [e.data["node"], e.data["percent"]])).toEqual([["1", 0], ["2", 33], ["3", 66]])
    expect(events.find((e) => e.event === "output")!.data).toMatchObject({ node_id: "3", filename: "sse_00001_.png", content_type: "image/png" })
    expect(events.slice(1).map((e) => Number(e.id))).toEqual(events.slice(1).map((_, i) => i + 1))
  })

  it("cancels a queued prompt (it leaves ComfyUI's queue and never runs) and a running one (only it is interrupted)", async () => {
    const { token, color } = unique()
    const running = await createWorkflow(wes, user, blurChain(color, `${token}/running`, 8))
    const queued = await createWorkflow(wes, user, blurChain(color ^ 0xffffff, `${token}/queued`, 8))
    const after = await createWorkflow(wes, user, smoke(color, `${token}/after`))
    await waitStatus(wes, user, running.id, ["running"])
    await poll("both others in ComfyUI's queue", async () => {
      const q = await comfyQueue(comfy)
      return q.pending.includes(queued.id) && q.pending.includes(after.id) ? true : undefined
    }, SLOW, 100)

    expect((await readJson<{ status: string }>(await wes.fetch(`/v1/workflow/${queued.id}/cancel`, json({}, user.auth)))).status).toBe("cancelled")
    await poll("the cancelled prompt to leave ComfyUI's queue", async () => (await comfyQueue(comfy)).pending.includes(queued.id) ? undefined : true, SLOW, 100)
    expect((await comfyQueue(comfy)).running).toEqual([running.id])

    expect((await readJson<{ status: string }>(await wes.fetch(`/v1/workflow/${running.id}/cancel`, json({}, user.auth)))).status).toBe("cancelled")
    const interrupted = await poll("ComfyUI to record the interrupt", () => comfyHistory(comfy, running.id), SLOW, 100)
    expect(comfyMessages(interrupted).at(-1)).toBe("execution_interrupted")

    expect((await waitStatus(wes, user, after.id)).status).toBe("completed")
    expect(comfyMessages(await comfyHistory(comfy, after.id)).at(-1)).toBe("execution_success")
    expect(await comfyHistory(comfy, queued.id)).toBeUndefined()
    expect(await comfyQueue(comfy)).toEqual({ running: [], pending: [] })
    expect((await detail(wes, user, running.id)).status).toBe("cancelled")
    expect((await detail(wes, user, queued.id)).status).toBe("cancelled")
  })

  it("refuses at create a node class ComfyUI does not have (read from its /object_info), naming it", async () => {
    const { token } = unique()
    const graph = { "1": { class_type: "NoSuchNode", inputs: {} }, "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: `${token}/x` } } }
    const res = await wes.fetch("/v1/workflow", { method: "POST", headers: user.auth, body: workflowForm({ name: "e2e" }, graph) })
    expect(res.status).toBe(400)
    expect((await readJson<{ message: string }>(res)).message).toContain("lacks node class NoSuchNode")
  })

  it("ends a prompt ComfyUI rejects `invalid`, with ComfyUI's error type, node and reasons", async () => {
    const { token, color } = unique()
    const save = { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: `${token}/x` } }
    const cases = [
      { graph: { "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1 } }, "2": save }, type: "prompt_outputs_failed_validation", node: "1", message: "node 1 (EmptyImage): Required input is missing: color" },
      { graph: { "1": { class_type: "EmptyImage", inputs: { width: 0, height: 8, batch_size: 1, color } }, "2": save }, type: "prompt_outputs_failed_validation", node: "1", message: "node 1 (EmptyImage): Value 0 smaller than min of 1: width" }
    ]
    const created = await Promise.all(cases.map((c) => createWorkflow(wes, user, c.graph)))
    for (const [i, c] of cases.entries()) {
      const done = await waitStatus(wes, user, created[i]!.id)
      expect(done).toMatchObject({ status: "invalid", exception_type: c.type, error_node: c.node })
      expect(done.exception_message).toContain(c.message)
    }
  })

  it("ends a run whose node raises `failed`, with the node and ComfyUI's exception", async () => {
    const { token } = unique()
    const w = await createWorkflow(wes, user, {
      "1": { class_type: "LoadImage", inputs: { image: "$file(photo)" } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: `${token}/never` } }
    }, { $photo: [new TextEncoder().encode("not an image"), `${token}.png`] as const })
    const done = await waitStatus(wes, user, w.id)
    expect(done).toMatchObject({ status: "failed", error_node: "1", exception_type: "PIL.UnidentifiedImageError" })
    expect(done.exception_message).toMatch(/^cannot identify image file '.*\.png'$/)
    expect(await outputsOf(w.id)).toEqual([])
  })

  it("drives a runner registered under ComfyUI's /api prefix (HTTP and WebSocket)", async () => {
    const { token, color } = unique()
    const other = await createUser(wes)
    await addRunner(wes, other, "comfyui-api", `${comfy.url}/api`)
    const w = await createWorkflow(wes, other, smoke(color, `${token}/api`))
    const stream = await subscribe(wes, other, w.id, "0")
    const events = await stream.ended
    expect(events.at(-1)).toMatchObject({ event: "done", data: { status: "completed" } })
    // Executing events come over the WebSocket at /api/ws.
    expect(events.filter((e) => e.event === "executing").map((e) => e.data["node"])).toEqual(["1", "2", "3"])
  })
}, SLOW)
