import * as SqlClient from "effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import { type WorkflowEvent, WorkflowEventBus } from "@wes/core"
import { Fixtures as F } from "@wes/core/testing"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { carriedEvents } from "../src/PgEventWakeups.js"
import type { PgListenOptions } from "../src/PgListener.js"
import { admin, awaitListener, freshSchema, storeOn } from "./harness.js"

/** Two stores (two pools, two LISTEN connections) on one fresh schema. */
const twoInstances = (bOptions: Parameters<typeof storeOn>[1] = {}) =>
  Effect.gen(function*() {
    const schema = yield* freshSchema
    const a = yield* Layer.build(storeOn(schema, { applicationName: `wes-test-a-${schema}` }))
    const b = yield* Layer.build(storeOn(schema, { applicationName: `wes-test-b-${schema}`, ...bOptions }))
    return { a: Context.get(a, WorkflowEventBus), b: Context.get(b, WorkflowEventBus), appB: `wes-test-b-${schema}` }
  })

/**
 * Two instances, a subscriber at B of a new workflow's events, B's LISTEN backend pid, and A's
 * first event already received at B.
 */
const subscribedAtB = (heartbeat: PgListenOptions) =>
  Effect.gen(function*() {
    const { a, appB, b } = yield* twoInstances({ events: heartbeat })
    const w = F.uuid()
    const received = yield* Queue.unbounded<WorkflowEvent>()
    yield* b.subscribe(w, 0).pipe(Stream.runForEach((e) => Queue.offer(received, e)), Effect.forkScoped)
    const before = yield* awaitListener(appB)
    yield* a.publish(w, [{ type: "status", data: "live" }])
    expect((yield* Queue.take(received).pipe(Effect.timeout("10 seconds"))).seq).toBe(1)
    return { a, appB, before, received, w }
  })

const seqs = (events: ReadonlyArray<WorkflowEvent>) => events.map((e) => e.seq)

/**
 * Follows `w` at `bus` after `after` in a fiber that collects `take` events; `reached` completes
 * once the event numbered `seq` has come (from then on, the subscriber is following).
 */
const following = (bus: WorkflowEventBus["Service"], w: string, after: number, take: number, seq: number) =>
  Effect.gen(function*() {
    const came = yield* Deferred.make<void>()
    const fiber = yield* bus.subscribe(w, after).pipe(
      Stream.tap((e) => e.seq === seq ? Deferred.succeed(came, undefined) : Effect.void),
      Stream.take(take),
      Stream.runCollect,
      Effect.forkChild
    )
    return { events: Fiber.join(fiber).pipe(Effect.timeout("10 seconds")), reached: Deferred.await(came).pipe(Effect.timeout("10 seconds")) }
  })

describe("events carried by a NOTIFY", () => {
  it("are read back from the payload the bus writes, with their sequence numbers; anything else carries nothing", () => {
    const id = "0190a1b2-c3d4-7e5f-8a9b-000000000001"
    const rest = `7 ${JSON.stringify({ at: "2026-11-26T10:00:00.000Z", events: [{ type: "progress", data: { value: 1 } }, { type: "done", data: null }] })}`
    expect(carriedEvents(id, rest)?.map((e) => [e.workflow_id, e.seq, e.type, e.data, DateTime.formatIso(e.created_at)])).toEqual([
      [id, 7, "progress", { value: 1 }, "2026-11-26T10:00:00.000Z"],
      [id, 8, "done", null, "2026-11-26T10:00:00.000Z"]
    ])
    expect(carriedEvents(id, "7 {not json")).toBeUndefined()
    expect(carriedEvents(id, `x ${JSON.stringify({ at: "2026-11-26T10:00:00.000Z", events: [] })}`)).toBeUndefined()
    expect(carriedEvents(id, `7 ${JSON.stringify({ at: "2026-11-26T10:00:00.000Z", events: [{ type: "nonsense", data: 1 }] })}`)).toBeUndefined()
  })
})

describe("event bus across instances", () => {
  it.live("a subscriber on instance B gets events published through A, in order, with replay", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoInstances()
      const w = F.uuid()
      yield* a.publish(w, [{ type: "status", data: 1 }, { type: "queue", data: 2 }, { type: "progress", data: 3 }])
      const fromOne = yield* following(b, w, 1, 5, 3)
      const fromZero = yield* following(b, w, 0, 6, 3)
      // Both have replayed what was there: the rest reaches them live.
      yield* fromOne.reached
      yield* fromZero.reached
      yield* a.publish(w, [{ type: "executing", data: 4 }])
      yield* a.publish(w, [{ type: "output", data: 5 }, { type: "done", data: 6 }])
      const one = yield* fromOne.events
      const zero = yield* fromZero.events
      expect(seqs(one)).toEqual([2, 3, 4, 5, 6])
      expect(one.map((e) => [e.type, e.data])).toEqual([
        ["queue", 2],
        ["progress", 3],
        ["executing", 4],
        ["output", 5],
        ["done", 6]
      ])
      expect(seqs(zero)).toEqual([1, 2, 3, 4, 5, 6])
      expect(yield* b.lastSeq(w)).toBe(6)
    }))

  it.live("events too large to ride in a NOTIFY reach B too (B reads them from the table)", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoInstances()
      const w = F.uuid()
      const big = "x".repeat(20_000)
      const got = yield* following(b, w, 0, 3, 1)
      yield* a.publish(w, [{ type: "status", data: "small" }])
      // B's subscriber has the first event: it is following when the big one comes.
      yield* got.reached
      yield* a.publish(w, [{ type: "output", data: { text: big } }])
      yield* a.publish(w, [{ type: "done", data: "small again" }])
      const events = yield* got.events
      expect(events.map((e) => [e.seq, e.type])).toEqual([[1, "status"], [2, "output"], [3, "done"]])
      expect((events[1]!.data as { text: string }).text.length).toBe(20_000)
    }))

  it.live("B notices at once that its LISTEN connection was closed, not at its next heartbeat", () =>
    Effect.gen(function*() {
      // A heartbeat far beyond the test's patience: only the driver's report can bring B back in time.
      const { a, appB, before, received, w } = yield* subscribedAtB({ heartbeatInterval: "1 hour", heartbeatTimeout: "1 hour" })

      yield* admin((sql) => sql`SELECT pg_terminate_backend(${before})`)
      const after = yield* awaitListener(appB, before)
      expect(after).not.toBe(before)
      yield* a.publish(w, [{ type: "done", data: "after the loss" }])
      expect((yield* Queue.take(received).pipe(Effect.timeout("10 seconds"))).seq).toBe(2)
    }))

  it.live("after B's LISTEN connection is lost and restored, B's subscriber misses nothing", () =>
    Effect.gen(function*() {
      // The loss below may hit B's connection before or after its first ping: either way nothing is missed.
      const { a, appB, before, received, w } = yield* subscribedAtB({ heartbeatInterval: "200 millis", heartbeatTimeout: "1 second" })

      const killed = yield* admin((sql) => sql<{ ok: boolean }>`SELECT pg_terminate_backend(${before}) AS ok`)
      expect(killed[0]?.ok).toBe(true)
      // Published while B is deaf: its NOTIFY goes nowhere; B must re-read after reconnecting.
      yield* a.publish(w, [{ type: "status", data: "during the outage" }])
      const afterOutage = yield* Queue.take(received).pipe(Effect.timeout("10 seconds"))
      expect([afterOutage.seq, afterOutage.data]).toEqual([2, "during the outage"])

      const after = yield* awaitListener(appB, before)
      expect(after).not.toBe(before)
      yield* a.publish(w, [{ type: "done", data: "live again" }])
      expect((yield* Queue.take(received).pipe(Effect.timeout("10 seconds"))).seq).toBe(3)
    }))
})

describe("publishing inside a transaction", () => {
  it.live("events published inside a transaction are logged with it: rolled back, none remain", () =>
    Effect.gen(function*() {
      const schema = yield* freshSchema
      const store = yield* Layer.build(storeOn(schema, { events: { heartbeatInterval: "1 hour" } }))
      const bus = Context.get(store, WorkflowEventBus)
      const sql = Context.get(store, SqlClient.SqlClient)
      const w = F.uuid()
      const failed = yield* sql.withTransaction(Effect.andThen(bus.publish(w, [{ type: "status", data: "rolled back" }]), Effect.fail("abort"))).pipe(
        Effect.flip
      )
      expect(failed).toBe("abort")
      expect(yield* bus.lastSeq(w)).toBe(0)
      expect(yield* bus.read(w, 0, 10)).toEqual([])
      // Committed, they are there.
      yield* sql.withTransaction(bus.publish(w, [{ type: "status", data: "kept" }]))
      expect((yield* bus.read(w, 0, 10)).map((e) => [e.seq, e.data])).toEqual([[1, "kept"]])
    }))
})
