import { it } from "@effect/vitest"
import { type FollowStart, type WorkflowEvent, WorkflowEventBus } from "@wes/core"
import { MemoryEventBus, MemoryPreviews } from "@wes/storage-memory"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { PassThrough } from "node:stream"
import { describe, expect } from "vitest"
import { SseHub, type SseHubOptions } from "../src/SseHub.js"
import { eventually, until } from "./polling.js"

const hub = (options: Partial<SseHubOptions> = {}) =>
  SseHub.layer({ keepAlive: "1 hour", ...options }).pipe(Layer.provideMerge(Layer.merge(MemoryEventBus, MemoryPreviews)))

const live = (after: number): FollowStart => ({ first: [], after: Option.some(after) })

/** A client connection: what the hub writes, as it arrives (read as fast as it comes, unless `reading` is false). */
const client = (reading = true) => {
  // 16 KB of buffer as node 20 gave every stream (node 22 raised the default to 64 KB): the
  // bound asserted below counts what a client that stops reading can hold before the hub sees it.
  const out = new PassThrough({ highWaterMark: 16 * 1024 })
  const seen = { value: "", ended: false, closed: false, writes: [] as Array<Buffer> }
  const write = out.write.bind(out)
  out.write = ((chunk: Buffer) => {
    seen.writes.push(chunk)
    return write(chunk)
  }) as typeof out.write
  if (reading) {
    out.setEncoding("utf8")
    out.on("data", (d: string) => (seen.value += d))
  }
  out.on("end", () => (seen.ended = true))
  out.on("close", () => (seen.closed = true))
  return { out, seen }
}

const ids = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]))

const publish = (id: string, n: number, type: WorkflowEvent["type"] = "progress") =>
  Effect.flatMap(WorkflowEventBus, (bus) =>
    Effect.forEach(Array.from({ length: n }, (_, i) => i), (i) => bus.publish(id, [{ type, data: { node: "1", value: i, max: n } }]), { discard: true }))

/** Until `c` has read the events numbered `seqs` (and, with `ended`, its stream ended). */
const read = (c: ReturnType<typeof client>, seqs: ReadonlyArray<number>, ended = false) =>
  eventually(() => `ids ${seqs.join(",")}${ended ? " and the end" : ""}; read ${ids(c.seen.value).join(",")}`, Effect.sync(() =>
    ids(c.seen.value).join(",") === seqs.join(",") && (!ended || c.seen.ended)))

/** The numbers from `from` to `to`. */
const seq = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

describe("SseHub", () => {
  it.effect("fans one log subscription out to every client, in order, and ends them all after done", () =>
    Effect.gen(function*() {
      const sse = yield* SseHub
      const clients = Array.from({ length: 50 }, () => client())
      for (const c of clients) sse.attach(c.out, "w1", live(0))
      expect(yield* sse.stats).toEqual({ clients: 50, workflows: 1 })
      yield* publish("w1", 20)
      yield* publish("w1", 1, "done")
      for (const c of clients) yield* read(c, seq(1, 21), true)
      yield* eventually("the hub to let go of the ended streams", Effect.map(sse.stats, (s) => s.clients === 0 && s.workflows === 0))
    }).pipe(Effect.provide(hub())))

  it.effect("encodes each event once: every client is written the very same bytes", () =>
    Effect.gen(function*() {
      const sse = yield* SseHub
      const clients = Array.from({ length: 3 }, () => client())
      for (const c of clients) sse.attach(c.out, "w7", live(0))
      for (let i = 1; i <= 5; i++) {
        yield* publish("w7", 1)
        for (const c of clients) yield* read(c, seq(1, i))
      }
      const [first, ...others] = clients.map((c) => c.seen.writes)
      expect(first).toHaveLength(5)
      for (const writes of others) {
        expect(writes).toHaveLength(5)
        writes.forEach((bytes, i) => expect(bytes).toBe(first![i]))
      }
    }).pipe(Effect.provide(hub())))

  it.effect("writes events that reach it together as one write per client, the same bytes for all", () =>
    Effect.gen(function*() {
      const sse = yield* SseHub
      const clients = Array.from({ length: 3 }, () => client())
      for (const c of clients) sse.attach(c.out, "w8", live(0))
      // One publish of five events, then five publishes before the feed runs: two writes each.
      yield* Effect.flatMap(WorkflowEventBus, (bus) =>
        bus.publish("w8", Array.from({ length: 5 }, (_, i) => ({ type: "progress" as const, data: { node: "1", value: i, max: 5 } }))))
      for (const c of clients) yield* read(c, seq(1, 5))
      yield* publish("w8", 5)
      for (const c of clients) yield* read(c, seq(1, 10))
      const [first, ...others] = clients.map((c) => c.seen.writes)
      expect(first).toHaveLength(2)
      for (const writes of others) writes.forEach((bytes, i) => expect(bytes).toBe(first![i]))
    }).pipe(Effect.provide(hub())))

  it.effect("a client joining behind reads its gap from the log, then follows live without gaps or repeats", () =>
    Effect.gen(function*() {
      const sse = yield* SseHub
      const first = client()
      sse.attach(first.out, "w2", live(0))
      yield* publish("w2", 30)
      yield* read(first, seq(1, 30))
      const late = client()
      const upToDate = client()
      sse.attach(late.out, "w2", live(5))
      sse.attach(upToDate.out, "w2", live(30))
      yield* publish("w2", 10)
      yield* read(first, seq(1, 40))
      yield* read(late, seq(6, 40))
      yield* read(upToDate, seq(31, 40))
      // Its gap came as one read of the log, and went out as one write.
      expect(ids(late.seen.writes[0]!.toString())).toEqual(seq(6, 30))
    }).pipe(Effect.provide(hub())))

  it.effect("writes the first events of a finished workflow and ends without following", () =>
    Effect.gen(function*() {
      const sse = yield* SseHub
      const now = yield* DateTime.now
      const event = (seq: number, type: WorkflowEvent["type"]): WorkflowEvent => ({ workflow_id: "w3", seq, type, data: {}, created_at: now })
      const c = client()
      sse.attach(c.out, "w3", { first: [event(4, "status"), event(4, "done")], after: Option.none() })
      yield* eventually("the stream to end", Effect.sync(() => c.seen.ended))
      expect(c.seen.value).toBe("id: 4\nevent: status\ndata: {}\n\nid: 4\nevent: done\ndata: {}\n\n")
      expect(yield* sse.stats).toEqual({ clients: 0, workflows: 0 })
    }).pipe(Effect.provide(hub())))

  it.effect("drops a client that stops reading once it is too far behind, saying why; the others keep going", () =>
    Effect.gen(function*() {
      const sse = yield* SseHub
      const stuck = client(false)
      const reader = client()
      sse.attach(stuck.out, "w4", live(0))
      sse.attach(reader.out, "w4", live(0))
      for (let i = 1; i <= 40; i++) {
        yield* publish("w4", 10)
        yield* read(reader, seq(1, 10 * i))
      }
      // Nothing was written past the limit (what crossed it, at most one publish of ten events,
      // and the last comment).
      const held = stuck.seen.writes.reduce((n, b) => n + b.length, 0)
      expect(held).toBeLessThan(16 * 1024 + 2_000 + 10 * 100 + 100)
      expect(stuck.seen.writes.at(-1)!.toString()).toBe(": too slow: this stream ends here; reconnect with Last-Event-ID to resume\n\n")
      expect(stuck.out.writableEnded).toBe(true)
      // It never drained: its connection is destroyed after the grace.
      yield* eventually("the stuck connection to be destroyed", Effect.sync(() => stuck.seen.closed))
      expect(yield* sse.stats).toEqual({ clients: 1, workflows: 1 })
    }).pipe(Effect.provide(hub({ maxBufferedBytes: 2_000, dropGrace: "50 millis" }))))

  it.effect("stops following a workflow when its last client leaves", () =>
    Effect.gen(function*() {
      const sse = yield* SseHub
      const a = client()
      const b = client()
      sse.attach(a.out, "w5", live(0))
      sse.attach(b.out, "w5", live(0))
      const statsAre = (clients: number, workflows: number) =>
        eventually(`${clients} clients of ${workflows} workflows`, Effect.map(sse.stats, (s) => s.clients === clients && s.workflows === workflows))
      a.out.destroy()
      yield* statsAre(1, 1)
      b.out.destroy()
      yield* statsAre(0, 0)
    }).pipe(Effect.provide(hub())))

  it("ends every stream when the server stops", async () => {
    const c = client()
    const stats = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const sse = yield* Effect.provide(SseHub, yield* Layer.build(hub()))
      sse.attach(c.out, "w6", live(0))
      return sse.stats
    })))
    await until("the stream to end", () => c.seen.ended)
    expect(await Effect.runPromise(stats)).toEqual({ clients: 0, workflows: 0 })
  })
})
