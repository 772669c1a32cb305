/**
 * Live previews against an unmodified ComfyUI (0.3.64 and 0.3.45). ComfyUI sends preview images
 * only from a progress bar given one: a sampler's latent previewer (which needs a model, and a
 * `--preview-method` other than the default none) and the bundled SaveImageWebsocket (whose
 * frames are outputs). So: the bundled node's real frames must NOT come out as previews; and a
 * test node of ours (nodes/wes_preview_steps.py, loaded through ComfyUI's own extra-paths and
 * whitelist flags) reports steps through ComfyUI's progress bar with a JPEG preview each, as the
 * latent previewer does, so ComfyUI builds and sends the very frames a sampler's steps produce.
 */
import { RealComfyUI } from "@wes/runner-client/testing"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { addRunner, createUser, createWorkflow, DATABASE_URL, type Instance, killAll, startInstance, type TestUser } from "../instances.js"
import { blurChain, imageColours, onComfyUI, setup, unique, waitStatus } from "./suite.js"
import { blocks } from "../sse-blocks.js"

const nodes = path.join(path.dirname(fileURLToPath(import.meta.url)), "nodes")


describe.skipIf(setup === undefined)(onComfyUI("live previews on a real ComfyUI"), () => {
  let comfy: RealComfyUI
  let wes: Instance
  let user: TestUser
  let config: string

  beforeAll(async () => {
    config = fs.mkdtempSync(path.join(os.tmpdir(), "wes-comfyui-nodes-"))
    fs.writeFileSync(path.join(config, "extra_model_paths.yaml"), `wes_tests:\n  custom_nodes: ${nodes}\n`)
    const args = [
      "--extra-model-paths-config", path.join(config, "extra_model_paths.yaml"),
      "--whitelist-custom-nodes", "websocket_image_save.py", "wes_preview_steps.py"
    ]
    ;[comfy, wes] = await Promise.all([RealComfyUI.start(setup!, { args }), startInstance("wes", DATABASE_URL, { WES_STORAGE: "memory" })])
    user = await createUser(wes)
    await addRunner(wes, user, "comfyui", comfy.url)
  })
  afterAll(async () => {
    await killAll()
    await comfy?.close()
    fs.rmSync(config, { recursive: true, force: true })
  })

  /** The whole streams of a workflow, with and without previews, from its first event. */
  const streams = async (id: string) => {
    const open = (query: string) => wes.fetch(`/v1/workflow/${id}/subscribe${query}`, { headers: { ...user.auth, "last-event-id": "0" } })
    const [a, b] = await Promise.all([open("?previews=true"), open("")])
    const [withPreviews, without] = await Promise.all([a.text(), b.text()])
    return { withPreviews: blocks(withPreviews), without: blocks(without) }
  }

  it("sends the JPEG previews ComfyUI's progress bar carries as `preview` events, to the subscriber that asked only", async () => {
    const { color } = unique()
    const w = await createWorkflow(wes, user, {
      "1": { class_type: "EmptyImage", inputs: { width: 32, height: 32, batch_size: 1, color } },
      "2": { class_type: "WesPreviewSteps", inputs: { image: ["1", 0], steps: 8, seconds: 3 } },
      "3": { class_type: "PreviewImage", inputs: { images: ["2", 0] } }
    })
    const { withPreviews, without } = await streams(w.id)
    expect((await waitStatus(wes, user, w.id)).status).toBe("completed")
    const previews = withPreviews.filter((b) => b.event === "preview")
    // 8 frames over about 3 seconds, at most 2 a second: at least one, never all 8 and more.
    expect(previews.length).toBeGreaterThanOrEqual(1)
    expect(previews.length).toBeLessThanOrEqual(8)
    for (const p of previews) {
      expect(p.id).toBeUndefined()
      const data = JSON.parse(p.data!) as { node: string; content_type: string; image: string }
      expect(data).toMatchObject({ node: "2", content_type: "image/jpeg" })
      // ComfyUI fits the 96 x 64 image into the preview's max size (512), as it does a sampler's.
      expect(await imageColours(setup!, Buffer.from(data.image, "base64"))).toMatchObject({ format: "JPEG", width: 512, height: 341 })
    }
    expect(without.some((b) => b.event === "preview")).toBe(false)
    expect(withPreviews.filter((b) => b.event !== "preview")).toEqual(without)
  })

  it("does not show SaveImageWebsocket's frames as previews: they are its outputs", async () => {
    const { color } = unique()
    // A few seconds of blurring first, so the streams follow the run before the frames come.
    const graph = blurChain(color, "unused", 2)
    graph["4"] = { class_type: "ImageScale", inputs: { image: ["3", 0], upscale_method: "nearest-exact", width: 40, height: 24, crop: "disabled" } }
    graph["5"] = { class_type: "SaveImageWebsocket", inputs: { images: ["4", 0] } }
    const w = await createWorkflow(wes, user, graph)
    const { withPreviews } = await streams(w.id)
    expect((await waitStatus(wes, user, w.id)).status).toBe("completed")
    expect(withPreviews.filter((b) => b.event === "preview")).toEqual([])
    expect(withPreviews.filter((b) => b.event === "output").map((b) => JSON.parse(b.data!).node_id)).toEqual(["5"])
  })
})
