/** `RunnerGateway.objectInfo` against the fake: what it serves, its own timeout and size bound, and the fake's node sets. */
import { describe, expect, it, layer } from "@effect/vitest"
import { RunnerGateway } from "@wes/core"
import { summarize } from "@wes/core/testing"
import { FakeComfyUI, saveImageWorkflow } from "@wes/runner-client/testing"
import * as Effect from "effect/Effect"
import { gatewayLayer, http, runnerFor, uuid } from "./harness.js"

const LOADER = { input: { required: { ckpt_name: [["sdxl.safetensors"], {}] } }, output: ["MODEL"], name: "CheckpointLoaderSimple" }

layer(gatewayLayer(), { excludeTestServices: true })("RunnerGateway.objectInfo", (it) => {
  it.effect("reads every node class the runner has loaded, with its inputs", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const info = yield* Effect.flatMap(RunnerGateway, (g) => g.objectInfo(runnerFor(fake)))
      expect(Object.keys(info)).toEqual(expect.arrayContaining(["EmptyImage", "SaveImage", "LoadImage"]))
      expect(fake.requests.at(-1)!.path).toBe("/object_info")
    }))

  it.effect("sees the node set and model files the fake is configured with, and changes to them", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped({ objectInfo: { nodes: ["EmptyImage", "SaveImage"], extra: { CheckpointLoaderSimple: LOADER } } })
      const gateway = yield* RunnerGateway
      const summary = summarize(yield* gateway.objectInfo(runnerFor(fake)))
      expect(summary.node_classes).toEqual(["CheckpointLoaderSimple", "EmptyImage", "SaveImage"])
      expect(summary.file_lists).toEqual([["sdxl.safetensors"]])
      fake.setObjectInfo({})
      expect(summarize(yield* gateway.objectInfo(runnerFor(fake))).node_classes).toContain("ImageInvert")
    }))

  it.effect("fails with the runner's status when /object_info fails, while the rest of the runner answers", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped({ objectInfo: { failStatus: 500 } })
      const gateway = yield* RunnerGateway
      const e = yield* Effect.flip(gateway.objectInfo(runnerFor(fake)))
      expect(e).toMatchObject({ _tag: "RunnerUnreachable", message: expect.stringContaining("GET /object_info: runner answered HTTP 500") })
      expect(yield* gateway.queue(runnerFor(fake))).toEqual({ running: [], pending: [] })
    }))

  it.effect("refuses an answer larger than objectInfoMaxBytes", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped({ objectInfo: { extra: { Big: { input: { required: { x: [["a".repeat(200_000)]] } } } } } })
      const e = yield* Effect.flip(Effect.flatMap(RunnerGateway, (g) => g.objectInfo(runnerFor(fake))))
      expect(e).toMatchObject({ _tag: "RunnerUnreachable", message: "GET /object_info: the answer is larger than 100000 bytes" })
    }).pipe(Effect.provide(gatewayLayer({ objectInfoMaxBytes: 100_000 }))))

  it.effect("has its own timeout, apart from ordinary calls'", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      fake.slowHttp(1_000)
      const e = yield* Effect.flip(Effect.flatMap(RunnerGateway, (g) => g.objectInfo(runnerFor(fake))))
      expect(e).toMatchObject({ _tag: "RunnerUnreachable", message: "GET /object_info: no answer within 200ms" })
      fake.restoreHttp()
    }).pipe(Effect.provide(gatewayLayer({ objectInfoTimeout: "200 millis", requestTimeout: "5 seconds" }))))
})

describe("the fake's node set", () => {
  it("rejects a prompt using a class it has not loaded, as ComfyUI does an unknown class", async () => {
    const fake = await FakeComfyUI.start({ objectInfo: { nodes: ["ImageInvert"] } })
    try {
      const res = await http(fake).post("/prompt", { prompt: saveImageWorkflow({ color: 1 }), prompt_id: uuid() })
      expect(res.status).toBe(400)
      expect(res.json<{ error: { type: string; message: string } }>().error).toMatchObject({
        type: "invalid_prompt",
        message: expect.stringContaining("does not exist")
      })
      expect((await http(fake).get("/object_info/EmptyImage")).json()).toEqual({})
    } finally {
      await fake.close()
    }
  })
})
