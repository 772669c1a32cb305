/**
 * The recordings checked against the real ComfyUI: each scenario is run on a fresh, unmodified
 * ComfyUI (with its bundled SaveImageWebsocket node loaded) and must give the stored recording
 * again, so a change in what ComfyUI sends is noticed (and the fake's test, which compares the fake
 * with the same recordings, stays meaningful).
 * `WES_RECORD=1 pnpm test:comfyui` rewrites the recordings instead.
 */
import { RealComfyUI, WEBSOCKET_IMAGE_SAVE } from "@wes/runner-client/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { comfyUISetup, comfyUIVersion } from "../comfyui/context.js"
import { record, scenarios } from "./scenarios.js"
import { readRecording, writeRecording } from "./stored.js"

const setup = comfyUISetup()
const version = comfyUIVersion()
const rewrite = process.env["WES_RECORD"] === "1"

describe.skipIf(setup === undefined)(`ComfyUI ${version} recordings`, () => {
  let comfy: RealComfyUI
  beforeAll(async () => {
    comfy = await RealComfyUI.start(setup!, { args: WEBSOCKET_IMAGE_SAVE })
    const stats = await (await fetch(`${comfy.url}/system_stats`)).json() as { system: { comfyui_version: string } }
    expect(stats.system.comfyui_version).toBe(version)
  })
  afterAll(async () => {
    await comfy?.close()
  })

  for (const scenario of scenarios) {
    it(`${scenario.name}: ComfyUI still sends what is recorded`, async () => {
      const recording = await record(comfy.url, scenario)
      const settle = scenario.settle ?? ((r) => r)
      if (rewrite) writeRecording(version, recording)
      else expect(settle(recording)).toEqual(settle(readRecording(version, scenario.name)))
    })
  }
})
