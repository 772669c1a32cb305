/**
 * The fake checked against the real ComfyUI: every recorded scenario (recordings of an
 * unmodified ComfyUI 0.3.64, kept current by recordings.comfyui.test.ts) is run against a fresh
 * fake, which must send the same HTTP answers and WebSocket frames in the same order, after the
 * same normalisation (for `/object_info`, the node classes' inputs and outputs: see `nodeShape`).
 */
import { FakeComfyUI } from "@wes/runner-client/testing"
import { afterEach, describe, expect, it } from "vitest"
import { record, scenarios } from "./scenarios.js"
import { readRecording, RECORDED_VERSION } from "./stored.js"

const open: Array<FakeComfyUI> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((f) => f.close()))
})

describe(`the fake against ComfyUI ${RECORDED_VERSION} recordings`, () => {
  for (const scenario of scenarios.filter((s) => s.realOnly !== true)) {
    it(`${scenario.name}: the fake sends what ComfyUI sent`, async () => {
      const fake = await FakeComfyUI.start()
      open.push(fake)
      const compared = scenario.compared ?? ((r) => r)
      const settle = scenario.settle ?? ((r) => r)
      expect(compared(settle(await record(fake.url, scenario)))).toEqual(compared(settle(readRecording(scenario.name))))
    })
  }
})
