/**
 * Live previews in the dispatcher: which frames are previews (a sampler's, not an output's), and
 * the throttle to `PREVIEWS_PER_SECOND` per workflow, counted under the TestClock.
 */
import { describe, expect, it } from "@effect/vitest"
import { type RunnerEvent, type WorkflowPreview, WorkflowPreviews } from "@wes/core"
import * as Effect from "effect/Effect"
import * as HashMap from "effect/HashMap"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/testing/TestClock"
import { eventPass } from "../../src/dispatch/EventPass.js"
import { frameNodesOf } from "../../src/dispatch/FrameOutputs.js"
import type { Tracked } from "../../src/dispatch/InFlight.js"
import { makeLivePreviews } from "../../src/dispatch/LivePreviews.js"
import { headOf, workflowOn } from "./harness.js"

const graph = {
  "1": { class_type: "EmptyLatentImage", inputs: {} },
  "2": { class_type: "KSampler", inputs: { latent_image: ["1", 0] } },
  "3": { class_type: "SaveImageWebsocket", inputs: { images: ["2", 0] } }
}
const png = (n: number) => new Uint8Array([0x89, 0x50, 0x4e, 0x47, n])
const frame = (id: string, node: string, n: number): RunnerEvent => ({ _tag: "ImageFrame", prompt_id: id, node, image_type: "image/jpeg", image: png(n) })

/** A `WorkflowPreviews` that records what it is given. */
const recording = () => {
  const published: Array<WorkflowPreview> = []
  const cleared: Array<string> = []
  const layer = Layer.succeed(WorkflowPreviews, WorkflowPreviews.of({
    publish: (p) => Effect.sync(() => void published.push(p)),
    clear: (id) => Effect.sync(() => void cleared.push(id)),
    subscribe: () => Stream.empty
  }))
  return { published, cleared, layer }
}

const preview = (n: number, workflow_id = "w"): WorkflowPreview => ({ workflow_id, node: "2", content_type: "image/jpeg", image: png(n) })

describe("live previews", () => {
  it("a batch gives each tracked workflow's latest sampler frame as its preview, never an output node's frame", () => {
    const w = workflowOn({ status: "running", workflow_json: graph })
    const tracked: Tracked = { workflow: headOf(w), phase: "onRunner", nodes: Object.keys(graph), frames: frameNodesOf(graph) }
    const pass = eventPass([frame(w.id, "2", 1), frame(w.id, "2", 2), frame(w.id, "3", 3), frame("someone-else", "2", 4)], HashMap.make([w.id, tracked]), () => undefined)
    expect([...pass.previews.values()]).toEqual([{ workflow_id: w.id, node: "2", content_type: "image/jpeg", image: png(2) }])
    // The prompt's end in the same batch: its previews are not shown any more.
    const ended = eventPass([frame(w.id, "2", 1), { _tag: "PromptDone", prompt_id: w.id }], HashMap.make([w.id, tracked]), () => undefined)
    expect(ended.previews.size).toBe(0)
  })

  it.effect("publishes at most two previews per second per workflow: the first at once, the latest of each half second after", () => {
    const store = recording()
    return Effect.gen(function*() {
      const live = yield* makeLivePreviews
      for (let n = 1; n <= 10; n++) yield* live.offer(preview(n))
      yield* live.offer(preview(1, "other"))
      expect(store.published.map((p) => [p.workflow_id, p.image[4]])).toEqual([["w", 1], ["other", 1]])
      yield* TestClock.adjust("499 millis")
      expect(store.published).toHaveLength(2)
      yield* TestClock.adjust("1 millis")
      // The latest of the window, not the second.
      expect(store.published.map((p) => p.image[4])).toEqual([1, 1, 10])
      for (let n = 11; n <= 30; n++) yield* live.offer(preview(n))
      yield* TestClock.adjust("500 millis")
      expect(store.published.map((p) => p.image[4])).toEqual([1, 1, 10, 30])
      // A quiet half second closes the window: the next preview goes out at once.
      yield* TestClock.adjust("1 second")
      yield* live.offer(preview(31))
      expect(store.published.map((p) => p.image[4])).toEqual([1, 1, 10, 30, 31])
      // 31 offers over 2 seconds: 4 published for `w`.
      expect(store.published.filter((p) => p.workflow_id === "w")).toHaveLength(4)
    }).pipe(Effect.scoped, Effect.provide(store.layer))
  })

  it.effect("the end of a run drops its waiting preview and clears the published one", () => {
    const store = recording()
    return Effect.gen(function*() {
      const live = yield* makeLivePreviews
      yield* live.offer(preview(1))
      yield* live.offer(preview(2))
      yield* live.end("w")
      yield* TestClock.adjust("2 seconds")
      expect(store.published.map((p) => p.image[4])).toEqual([1])
      expect(store.cleared).toEqual(["w"])
      // A workflow that never showed a preview costs no clear.
      yield* live.end("quiet")
      expect(store.cleared).toEqual(["w"])
    }).pipe(Effect.scoped, Effect.provide(store.layer))
  })
})
