/**
 * The harness of the real-ComfyUI suites: each project starts the ComfyUI version it names, and a
 * test file can start its ComfyUI with more flags (here ComfyUI's bundled SaveImageWebsocket
 * node, loaded by `--whitelist-custom-nodes`, which every supported version accepts).
 */
import { RealComfyUI } from "@wes/runner-client/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { comfyUISetup, comfyUIVersion, onComfyUI } from "./context.js"

const setup = comfyUISetup()

describe.skipIf(setup === undefined)(onComfyUI("RealComfyUI"), () => {
  let comfy: RealComfyUI
  beforeAll(async () => {
    comfy = await RealComfyUI.start(setup!, { args: ["--whitelist-custom-nodes", "websocket_image_save.py"] })
  })
  afterAll(async () => {
    await comfy?.close()
  })

  it("runs the project's version, with the flags the test file gave: SaveImageWebsocket is loaded, and kept on restart", async () => {
    const version = async () => ((await (await fetch(`${comfy.url}/system_stats`)).json()) as { system: { comfyui_version: string } }).system.comfyui_version
    const nodeClass = async () => Object.keys(await (await fetch(`${comfy.url}/object_info/SaveImageWebsocket`)).json() as object)
    expect(await version()).toBe(comfyUIVersion())
    expect(comfy.version).toBe(comfyUIVersion())
    expect(await nodeClass()).toEqual(["SaveImageWebsocket"])
    await comfy.restart()
    expect(await nodeClass()).toEqual(["SaveImageWebsocket"])
  })

  it("refuses a flag with a space in it (the setup script splits its extra flags at spaces)", async () => {
    await expect(RealComfyUI.start(setup!, { args: ["--whitelist-custom-nodes a.py"] })).rejects.toThrow("splits COMFYUI_EXTRA_ARGS at spaces")
  })
})
