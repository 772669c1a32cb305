/**
 * An unmodified ComfyUI behind `wes-agent` (issue 34), WES never told its address: `wes serve`
 * (memory store) knows only an agent runner and its token; the agent, started beside ComfyUI with
 * `--comfyui <its url> --comfyui-dir <its folder>`, dials out to WES. Through that one connection
 * the scenarios of the direct suite that make sense run as they do there (workflows.comfyui.test.ts):
 * parameters (a BOOLEAN set false), an uploaded input, outputs of several kinds (files, temp
 * previews, images sent over ComfyUI's WebSocket), the SSE of a real run, cancel while queued and
 * while running. And the agent's disk hygiene: once a workflow is `completed` (WES holds its
 * outputs), its files are gone from ComfyUI's output, temp and input folders, while a file
 * ComfyUI made for someone else is left alone.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { RealComfyUI, solidPng, WEBSOCKET_IMAGE_SAVE } from "@wes/runner-client/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type AgentProcess, addAgentRunner, awaitAgent, issueRunnerToken, killAgents, runnerDetail, startAgentProcess } from "../agents.js"
import { json, readJson } from "../harness.js"
import { createUser, createWorkflow, DATABASE_URL, type Instance, killAll, startInstance, subscribe, type TestUser } from "../instances.js"
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

type Prompt = [number, string, Record<string, { inputs: Record<string, unknown> }>]

describe.skipIf(setup === undefined)(onComfyUI("a real ComfyUI behind wes-agent, WES never told its address"), () => {
  let comfy: RealComfyUI
  let wes: Instance
  let user: TestUser
  let agent: AgentProcess
  /** ComfyUI's own folder (`<install>/comfyui`): output, temp and input are inside. */
  const comfyDir = () => path.join(setup!.dir, "comfyui")

  beforeAll(async () => {
    ;[comfy, wes] = await Promise.all([
      RealComfyUI.start(setup!, { args: WEBSOCKET_IMAGE_SAVE }),
      // WES_RUNNER_ALLOW_PRIVATE stays as instances.ts sets it; it is beside the point: no runner has an address.
      startInstance("wes", DATABASE_URL, { WES_STORAGE: "memory" })
    ])
    user = await createUser(wes)
    const runner = await addAgentRunner(wes, user, "behind-nat")
    expect(runner.endpoint).not.toContain(String(comfy.port))
    const { token } = await issueRunnerToken(wes, user, runner.id)
    agent = startAgentProcess({ server: wes.base, comfyui: comfy.url, token, comfyuiDir: comfyDir() })
    await awaitAgent(wes, user, runner.id, true, 60_000, agent.output)
    // Its ComfyUI's node classes, read through the agent (create checks them).
    await poll("the runner's capabilities read through the agent", async () =>
      (await runnerDetail(wes, user, runner.id)).capabilities != null ? true : undefined, SLOW, 100)
  })
  afterAll(async () => {
    await killAgents()
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

  /** The file on ComfyUI's disk that `/view` serves for `file` (`type` output, temp or input). */
  const onDisk = (file: { readonly filename: string; readonly subfolder: string; readonly type: string }) =>
    path.join(comfyDir(), file.type, file.subfolder, file.filename)

  /** ComfyUI's own answer for a file: 200 while it is there, 404 once it is gone. */
  const viewStatus = async (file: { readonly filename: string; readonly subfolder: string; readonly type: string }) => {
    const q = new URLSearchParams({ filename: file.filename, subfolder: file.subfolder, type: file.type })
    const res = await fetch(`${comfy.url}/view?${q.toString()}`)
    await res.arrayBuffer()
    return res.status
  }

  it("passes a BOOLEAN $text parameter set false, and a #choice, through the agent to ComfyUI", async () => {
    const { token, color } = unique()
    // 64 x 64 beside 32 x 32: unmatched sizes pad the second (96 wide); matched would scale it (128 wide).
    const w = await createWorkflow(wes, user, {
      "1": { class_type: "EmptyImage", inputs: { width: 64, height: 64, batch_size: 1, color } },
      "2": { class_type: "EmptyImage", inputs: { width: 32, height: 32, batch_size: 1, color: color ^ 0xffffff } },
      "3": { class_type: "ImageStitch", inputs: { image1: ["1", 0], image2: ["2", 0], direction: "right", match_image_size: "$text(match)", spacing_width: 0, spacing_color: "#choice(spacing, white, black)" } },
      "4": { class_type: "SaveImage", inputs: { images: ["3", 0], filename_prefix: `${token}/stitch` } }
    }, { $match: "false", "#spacing": "black" })
    expect((await waitStatus(wes, user, w.id)).status).toBe("completed")
    const prompt = (await comfyHistory(comfy, w.id))!["prompt"] as Prompt
    expect(prompt[2]["3"]!.inputs["match_image_size"]).toBe(false)
    expect(prompt[2]["3"]!.inputs["spacing_color"]).toBe("black")
    const [output] = await outputsOf(w.id)
    const image = await imageColours(setup!, (await download(w.id, output!)).bytes)
    expect([image.width, image.height]).toEqual([96, 64])
  })

  it("uploads a $file input through the agent that LoadImage reads: the ImageInvert output has the inverted pixels", async () => {
    const { token } = unique()
    const w = await createWorkflow(wes, user, {
      "1": { class_type: "LoadImage", inputs: { image: "$file(photo)" } },
      "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
      "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: `${token}/inverted` } }
    }, { $photo: [new Uint8Array(solidPng(16, 12, 0x336699)), `${token}.png`] as const })
    expect((await waitStatus(wes, user, w.id)).status).toBe("completed")
    const prompt = (await comfyHistory(comfy, w.id))!["prompt"] as Prompt
    expect(prompt[2]["1"]!.inputs["image"]).toMatch(new RegExp(`^wes/${w.id}_.*${token}\\.png$`))
    const [output] = await outputsOf(w.id)
    const image = await imageColours(setup!, (await download(w.id, output!)).bytes)
    expect(image).toMatchObject({ format: "PNG", width: 16, height: 12 })
    expect(image.colours).toHaveLength(1)
    const [count, rgb] = image.colours[0]!
    expect(count).toBe(192)
    rgb.forEach((channel, i) => expect(Math.abs(channel - [0xcc, 0x99, 0x66][i]!)).toBeLessThanOrEqual(1))
  })

  it("copies outputs of several kinds through the agent: two images, an animated WEBP, temp previews, WebSocket images", async () => {
    const { token, color } = unique()
    const w = await createWorkflow(wes, user, {
      "1": { class_type: "EmptyImage", inputs: { width: 32, height: 24, batch_size: 2, color } },
      "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: `${token}/still` } },
      "3": { class_type: "SaveAnimatedWEBP", inputs: { images: ["1", 0], filename_prefix: `${token}/anim`, fps: 4, lossless: true, quality: 80, method: "default" } },
      "4": { class_type: "PreviewImage", inputs: { images: ["1", 0] } },
      "5": { class_type: "SaveImageWebsocket", inputs: { images: ["1", 0] } }
    })
    expect((await waitStatus(wes, user, w.id)).status).toBe("completed")
    const outputs = await outputsOf(w.id)
    const kinds = outputs.map((o) => `${o.node_id} ${o.type} ${o.content_type} ${o.filename.replace(/_temp_[a-z]{5}_/, "_temp_*_")}`).sort()
    expect(kinds).toEqual([
      "2 output image/png still_00001_.png",
      "2 output image/png still_00002_.png",
      "3 output image/webp anim_00001_.webp",
      "4 temp image/png ComfyUI_temp_*_00001_.png",
      "4 temp image/png ComfyUI_temp_*_00002_.png",
      "5 websocket image/png websocket_5_00001_.png",
      "5 websocket image/png websocket_5_00002_.png"
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

  it("streams the real run over SSE through the agent: statuses, executing per node with the overall percent, the output, done", async () => {
    const { token, color } = unique()
    const w = await createWorkflow(wes, user, smoke(color, `${token}/sse`))
    const stream = await subscribe(wes, user, w.id, "0")
    const events = await stream.ended
    const kinds = events.map((e) => e.event === "status" || e.event === "done" ? `${e.event}:${String(e.data["status"])}` : e.event)
    expect(kinds.slice(1).filter((k) => k !== "queue")).toEqual([
      "status:accepted", "status:uploaded", "status:queued", "status:running",
      "executing", "executing", "executing", "output", "status:completed", "done:completed"
    ])
    expect(events.filter((e) => e.event === "executing").map((e) => [e.data["node"], e.data["percent"]])).toEqual([["1", 0], ["2", 33], ["3", 66]])
    expect(events.find((e) => e.event === "output")!.data).toMatchObject({ node_id: "3", filename: "sse_00001_.png", content_type: "image/png" })
  })

  it("cancels through the agent a queued prompt (it leaves ComfyUI's queue and never runs) and a running one (only it is interrupted)", async () => {
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

  it("deletes a completed workflow's outputs, temp previews and uploaded input from ComfyUI's folders, and nothing else", async () => {
    const { token, color } = unique()
    // A prompt posted to ComfyUI by someone else (not through WES): its output must stay.
    const foreign = crypto.randomUUID()
    const posted = await fetch(`${comfy.url}/prompt`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ prompt_id: foreign, prompt: smoke(color, `${token}/foreign`) })
    })
    expect(posted.status).toBe(200)
    const foreignFile = { filename: "foreign_00001_.png", subfolder: token, type: "output" }
    await poll("ComfyUI to finish the foreign prompt", async () => comfyMessages(await comfyHistory(comfy, foreign)).at(-1) === "execution_success" ? true : undefined, 30_000, 100)

    const w = await createWorkflow(wes, user, {
      "1": { class_type: "LoadImage", inputs: { image: "$file(photo)" } },
      "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
      "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: `${token}/kept` } },
      "4": { class_type: "PreviewImage", inputs: { images: ["2", 0] } }
    }, { $photo: [new Uint8Array(solidPng(8, 8, color)), `${token}.png`] as const })
    expect((await waitStatus(wes, user, w.id)).status).toBe("completed")

    // What ComfyUI wrote for the run, as its history lists it, and the input it read.
    const history = (await comfyHistory(comfy, w.id))!
    const written = Object.values(history["outputs"] as Record<string, { images?: Array<{ filename: string; subfolder: string; type: string }> }>)
      .flatMap((o) => o.images ?? [])
    expect(written.map((f) => f.type).sort()).toEqual(["output", "temp"])
    const uploaded = ((history["prompt"] as Prompt)[2]["1"]!.inputs["image"] as string)
    const input = { filename: path.posix.basename(uploaded), subfolder: path.posix.dirname(uploaded), type: "input" }
    const files = [...written, input]

    // WES holds the outputs (downloadable, byte for byte as listed) ...
    for (const o of await outputsOf(w.id)) expect((await download(w.id, o)).bytes.length).toBe(o.size)
    // ... and the agent deleted the run's files from ComfyUI's disk.
    await poll(() => `the run's files to leave ComfyUI's folders: ${files.filter((f) => fs.existsSync(onDisk(f))).map(onDisk).join(", ")}`, async () =>
      files.every((f) => !fs.existsSync(onDisk(f))) ? true : undefined, 30_000, 100)
    for (const f of files) expect(await viewStatus(f)).toBe(404)
    // Downloads still work: WES serves its own copies.
    for (const o of await outputsOf(w.id)) expect((await download(w.id, o)).bytes.length).toBe(o.size)
    // The file of the prompt WES did not run is still there.
    expect(fs.existsSync(onDisk(foreignFile))).toBe(true)
    expect(await viewStatus(foreignFile)).toBe(200)
  })
}, SLOW)
