/**
 * `preview` events on the SSE stream (SseHub + SsePreviews): only to clients that asked, without
 * an `id:`, and a slot of one for a client that does not read.
 */
import { it } from "@effect/vitest"
import { type FollowStart, type WorkflowPreview, WorkflowEventBus, WorkflowPreviews } from "@wes/core"
import { MemoryEventBus, MemoryPreviews } from "@wes/storage-memory"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { PassThrough } from "node:stream"
import { describe, expect } from "vitest"
import { SseHub } from "../src/SseHub.js"
import { eventually } from "./polling.js"

const hub = SseHub.layer({ keepAlive: "1 hour" }).pipe(Layer.provideMerge(Layer.merge(MemoryEventBus, MemoryPreviews)))
const live: FollowStart = { first: [], after: Option.some(0) }

const client = (reading = true) => {
  const out = new PassThrough({ highWaterMark: 16 * 1024 })
  const seen = { value: "", bytes: 0 }
  const write = out.write.bind(out)
  out.write = ((chunk: Buffer) => {
    seen.bytes += chunk.length
    return write(chunk)
  }) as typeof out.write
  if (reading) {
    out.setEncoding("utf8")
    out.on("data", (d: string) => (seen.value += d))
  }
  return { out, seen }
}

/** The `preview` events a client read, decoded. */
const previewsOf = (text: string) =>
  [...text.matchAll(/^event: preview\ndata: (.*)$/gm)].map((m) => JSON.parse(m[1]!) as { node: string; content_type: string; image: string })

const image = (n: number, size = 64) => new Uint8Array(size).fill(n)
const preview = (workflow_id: string, n: number, size?: number): WorkflowPreview => ({ workflow_id, node: "3", content_type: "image/jpeg", image: image(n, size) })
const publish = (p: WorkflowPreview) => Effect.flatMap(WorkflowPreviews, (s) => s.publish(p))

describe("SSE previews", () => {
  it.effect("a client with previews=true gets `preview` events (no id, the image in base64); one without gets exactly the events", () =>
    Effect.gen(function*() {
      const sse = yield* SseHub
      const withPreviews = client()
      const without = client()
      sse.attach(withPreviews.out, "p1", live, true)
      sse.attach(without.out, "p1", live)
      yield* publish(preview("p1", 7))
      yield* eventually("the preview", Effect.sync(() => previewsOf(withPreviews.seen.value).length === 1))
      yield* Effect.flatMap(WorkflowEventBus, (bus) => bus.publish("p1", [{ type: "progress", data: { node: "3", value: 1, max: 2 } }]))
      yield* eventually("the event", Effect.sync(() => without.seen.value.includes("id: 1") && withPreviews.seen.value.includes("id: 1")))
      const [p] = previewsOf(withPreviews.seen.value)
      expect(p).toEqual({ node: "3", content_type: "image/jpeg", image: Buffer.from(image(7)).toString("base64") })
      // The preview event has no `id:` line: Last-Event-ID stays the last logged event's.
      expect(withPreviews.seen.value).toMatch(/^event: preview\ndata: .*\n\nid: 1\nevent: progress\n/)
      expect(without.seen.value).toBe(`id: 1\nevent: progress\ndata: {"node":"3","value":1,"max":2}\n\n`)
      // Never logged as a workflow event.
      expect((yield* Effect.flatMap(WorkflowEventBus, (bus) => bus.read("p1", 0, 100))).map((e) => e.type)).toEqual(["progress"])
    }).pipe(Effect.provide(hub)))

  it.effect("a client that stops reading holds one waiting preview at most, however many come, and is not dropped", () =>
    Effect.gen(function*() {
      const sse = yield* SseHub
      const stuck = client(false)
      const reader = client()
      sse.attach(stuck.out, "p2", live, true)
      sse.attach(reader.out, "p2", live, true)
      const size = 10 * 1024
      for (let n = 1; n <= 200; n++) {
        yield* publish(preview("p2", n % 256, size))
        yield* eventually(`preview ${n}`, Effect.sync(() => previewsOf(reader.seen.value).length === n))
      }
      // 200 previews of 10 KB (about 2.7 MB as events) went to the reader; the stuck client was
      // written what fills its pass-through's two 16 KB buffers, plus one preview, and keeps one waiting.
      const event = 14 * 1024
      expect(reader.seen.bytes).toBeGreaterThan(200 * size)
      expect(stuck.seen.bytes).toBeLessThanOrEqual(2 * 16 * 1024 + event)
      expect(stuck.out.writableEnded).toBe(false)
      expect(yield* sse.stats).toEqual({ clients: 2, workflows: 1 })
      // Once it reads, it gets the latest preview, not the ones in between.
      stuck.out.setEncoding("utf8")
      let text = ""
      stuck.out.on("data", (d: string) => (text += d))
      yield* eventually("the waiting preview", Effect.sync(() => previewsOf(text).at(-1)?.image === Buffer.from(image(200 % 256, size)).toString("base64")))
      expect(previewsOf(text).length).toBeLessThan(5)
    }).pipe(Effect.provide(hub)))
})
