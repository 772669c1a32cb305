import { it } from "@effect/vitest"
import { type FollowStart, type WorkflowEvent, WorkflowEventBus } from "@wes/core"
import { MemoryEventBus } from "@wes/storage-memory"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { Readable } from "node:stream"
import { describe, expect } from "vitest"
import { SseHub } from "../src/SseHub.js"

const hub = (maxBufferedBytes?: number) =>
  SseHub.layer({ keepAlive: "1 hour", ...(maxBufferedBytes === undefined ? {} : { maxBufferedBytes }) }).pipe(Layer.provideMerge(MemoryEventBus))

const live = (after: number): FollowStart => ({ first: [], after: Option.some(after) })

/** Everything a client stream carries, as it arrives. */
const collect = (out: Readable) => {
  const text = { value: "", ended: false, destroyed: false }
  out.setEncoding("utf8")
  out.on("data", (d: string) => (text.value += d))
  out.on("end", () => (text.ended = true))
  out.on("close", () => (text.destroyed = !text.ended))
  return text
}

const ids = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))

const publish = (id: string, n: number, type: WorkflowEvent["type"] = "progress") =>
  Effect.flatMap(WorkflowEventBus, (bus) =>
    Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) => bus.publish(id, [{ type, data: { node: "1", value: i, max: n } }]), { discard: true }))

/** Lets stream callbacks and forked fibers run. */
const settle = Effect.promise(() => new Promise<void>((r) => setTimeout(r, 20)))

describe("SseHub", () => {
  it.scoped("fans one log subscription out to every client, in order, and ends them all after done", () =>
    Effect.gen(function*() {
      const sse = yield* SseHub
      const clients = yield* Effect.forEach(Array.from({ length: 50 }, () => 0), () => Effect.map(sse.open("w1", live(0)), collect))
      expect(yield* sse.stats).toEqual({ clients: 50, workflows: 1 })
      yield* publish("w1", 20)
      yield* publish("w1", 1, "done")
      yield* settle
      for (const c of clients) {
        expect(ids(c.value)).toEqual(Array.from({ length: 21 }, (_, i) => i + 1))
        expect(c.ended).toBe(true)
      }
      expect(yield* sse.stats).toEqual({ clients: 0, workflows: 0 })
    }).pipe(Effect.provide(hub())))

  it.scoped("a client joining behind reads its gap from the log, then follows live without gaps or repeats", () =>
    Effect.gen(function*() {
      const sse = yield* SseHub
      const first = collect(yield* sse.open("w2", live(0)))
      yield* publish("w2", 30)
      yield* settle
      const late = collect(yield* sse.open("w2", live(5)))
      const upToDate = collect(yield* sse.open("w2", live(30)))
      yield* publish("w2", 10)
      yield* settle
      expect(ids(first.value)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1))
      expect(ids(late.value)).toEqual(Array.from({ length: 35 }, (_, i) => i + 6))
      expect(ids(upToDate.value)).toEqual(Array.from({ length: 10 }, (_, i) => i + 31))
    }).pipe(Effect.provide(hub())))

  it.scoped("writes the first events of a finished workflow and ends without following", () =>
    Effect.gen(function*() {
      const sse = yield* SseHub
      const now = yield* DateTime.now
      const event = (seq: number, type: WorkflowEvent["type"]): WorkflowEvent => ({ workflow_id: "w3", seq, type, data: {}, created_at: now })
      const c = collect(yield* sse.open("w3", { first: [event(4, "status"), event(4, "done")], after: Option.none() }))
      yield* settle
      expect(c.value).toBe('id: 4\nevent: status\ndata: {}\n\nid: 4\nevent: done\ndata: {}\n\n')
      expect(c.ended).toBe(true)
      expect(yield* sse.stats).toEqual({ clients: 0, workflows: 0 })
    }).pipe(Effect.provide(hub())))

  it.scoped("disconnects a client that stops reading once it is too far behind; the others keep going", () =>
    Effect.gen(function*() {
      const sse = yield* SseHub
      const stuck = yield* sse.open("w4", live(0))
      let stuckClosed = false
      stuck.on("close", () => (stuckClosed = true))
      const reader = collect(yield* sse.open("w4", live(0)))
      for (let i = 0; i < 20; i++) {
        yield* publish("w4", 10)
        yield* settle
      }
      expect(stuckClosed).toBe(true)
      // Nothing was written past the limit (one event over it at most).
      expect(stuck.readableLength).toBeLessThan(2_000 + 100)
      expect(ids(reader.value)).toHaveLength(200)
      expect(yield* sse.stats).toEqual({ clients: 1, workflows: 1 })
    }).pipe(Effect.provide(hub(2_000))))

  it.scoped("stops following a workflow when its last client leaves", () =>
    Effect.gen(function*() {
      const sse = yield* SseHub
      const a = yield* sse.open("w5", live(0))
      const b = yield* sse.open("w5", live(0))
      a.destroy()
      yield* settle
      expect(yield* sse.stats).toEqual({ clients: 1, workflows: 1 })
      b.destroy()
      yield* settle
      expect(yield* sse.stats).toEqual({ clients: 0, workflows: 0 })
    }).pipe(Effect.provide(hub())))

  it("ends every stream when the server stops", async () => {
    const { c, stats } = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(hub())
      const sse = yield* Effect.provide(SseHub, context)
      const c = collect(yield* sse.open("w6", live(0)))
      return { c, stats: sse.stats }
    })))
    await new Promise((r) => setTimeout(r, 20))
    expect(c.ended).toBe(true)
    expect(await Effect.runPromise(stats)).toEqual({ clients: 0, workflows: 0 })
  })
})
