/**
 * The fake checked against the real ComfyUI: every recorded scenario (recordings of an unmodified
 * ComfyUI, one directory per version, kept current by recordings.comfyui.test.ts) is run against
 * a fresh fake started as that version, which must send the same HTTP answers and WebSocket frames
 * in the same order, after the same normalisation (for `/object_info`, the node classes' inputs
 * and outputs: see `nodeShape`).
 */
import { FakeComfyUI, type FakeComfyUIOptions } from "@wes/runner-client/testing"
import { afterEach, describe, expect, it } from "vitest"
import { record, scenarios } from "./scenarios.js"
import { FAKE_VERSION, readRecording, RECORDED_VERSIONS } from "./stored.js"

const open: Array<FakeComfyUI> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((f) => f.close()))
})

/** The fake's switches for each recorded version (README: Versions). */
const FAKE_AS: Readonly<Record<string, FakeComfyUIOptions>> = {
  [FAKE_VERSION]: {},
  "0.3.45": { version: "0.3.45", globalInterrupt: true, promptIdMode: "legacy" }
}

for (const version of RECORDED_VERSIONS) {
  describe(`the fake against ComfyUI ${version} recordings`, () => {
    for (const scenario of scenarios.filter((s) => s.realOnly !== true)) {
      it(`${scenario.name}: the fake sends what ComfyUI sent`, async () => {
        const options = FAKE_AS[version]
        if (options === undefined) throw new Error(`ComfyUI ${version} is recorded: say in FAKE_AS how the fake plays it`)
        const fake = await FakeComfyUI.start(options)
        open.push(fake)
        const compared = scenario.compared ?? ((r) => r)
        const settle = scenario.settle ?? ((r) => r)
        expect(compared(settle(await record(fake.url, scenario)))).toEqual(compared(settle(readRecording(version, scenario.name))))
      })
    }
  })
}
