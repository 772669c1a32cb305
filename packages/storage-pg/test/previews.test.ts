/**
 * Live previews across instances: two stores (two pools, two LISTEN connections) on one schema,
 * as two `wes serve` on one database. A preview published by the instance driving the run reaches
 * a subscriber connected to the other; a late subscriber gets the latest at once; the row goes at
 * the end of the run; a subscriber that does not take previews holds one, the latest.
 */
import { it } from "@effect/vitest"
import { Fixtures as F } from "@wes/core/testing"
import { type WorkflowPreview, WorkflowPreviews } from "@wes/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as SqlClient from "effect/sql/SqlClient"
import * as Stream from "effect/Stream"
import { describe, expect } from "vitest"
import { awaitListener, freshSchema, storeOn } from "./harness.js"

const twoInstances = Effect.gen(function*() {
  const schema = yield* freshSchema
  const a = yield* Layer.build(storeOn(schema, { applicationName: `wes-test-a-${schema}` }))
  const b = yield* Layer.build(storeOn(schema, { applicationName: `wes-test-b-${schema}` }))
  yield* awaitListener(`wes-test-b-${schema}`)
  return { a: Context.get(a, WorkflowPreviews), b: Context.get(b, WorkflowPreviews), sql: Context.get(a, SqlClient.SqlClient) }
})

const preview = (workflow_id: string, n: number): WorkflowPreview => ({
  workflow_id,
  node: "3",
  content_type: "image/jpeg",
  image: new Uint8Array(20_000).fill(n)
})
const first = (p: WorkflowPreview) => p.image[0]

describe("previews on PostgreSQL", () => {
  it.live("a preview published on one instance reaches a subscriber on the other; a late subscriber gets the latest; the end clears it", () =>
    Effect.gen(function*() {
      const { a, b, sql } = yield* twoInstances
      const w = F.uuid()
      const received = yield* Queue.unbounded<WorkflowPreview>()
      yield* b.subscribe(w).pipe(Stream.runForEach((p) => Queue.offer(received, p)), Effect.forkScoped)
      // Published until one arrives: the subscription's LISTEN may not be in place for the first.
      const arrived = yield* a.publish(preview(w, 1)).pipe(
        Effect.andThen(Queue.take(received).pipe(Effect.timeout("1 second"))),
        Effect.retry({ times: 10 })
      )
      expect(arrived).toMatchObject({ workflow_id: w, node: "3", content_type: "image/jpeg" })
      expect(arrived.image.length).toBe(20_000)
      yield* a.publish(preview(w, 2))
      // (The first may have come twice: from the subscription's first read and from its NOTIFY.)
      while (first(yield* Queue.take(received).pipe(Effect.timeout("10 seconds"))) !== 2) { /* an earlier one */ }
      // A subscriber joining now gets the latest at once, from the table.
      const late = yield* b.subscribe(w).pipe(Stream.take(1), Stream.runCollect, Effect.timeout("10 seconds"))
      expect(Array.from(late).map(first)).toEqual([2])
      // One row per workflow, gone with the run.
      const rows = () => sql<{ n: number }>`SELECT count(*)::int AS n FROM workflow_previews`.pipe(Effect.map((r) => r[0]!.n))
      expect(yield* rows()).toBe(1)
      yield* a.clear(w)
      expect(yield* rows()).toBe(0)
    }))

  it.live("a subscriber that takes nothing holds one preview, the latest, however many were published", () =>
    Effect.gen(function*() {
      const { a, b } = yield* twoInstances
      const w = F.uuid()
      const pulls = yield* Queue.unbounded<void>()
      const got: Array<number> = []
      // Takes one preview each time it is allowed to.
      const fiber = yield* b.subscribe(w).pipe(
        Stream.mapEffect((p) => Effect.as(Queue.take(pulls), p)),
        Stream.runForEach((p) => Effect.sync(() => got.push(first(p)!))),
        Effect.forkScoped
      )
      const watcher = yield* Queue.unbounded<WorkflowPreview>()
      yield* b.subscribe(w).pipe(Stream.runForEach((p) => Queue.offer(watcher, p)), Effect.forkScoped)
      yield* a.publish(preview(w, 1)).pipe(Effect.andThen(Queue.take(watcher).pipe(Effect.timeout("1 second"))), Effect.retry({ times: 10 }))
      for (let n = 2; n <= 30; n++) {
        yield* a.publish(preview(w, n))
        // Every one reached the instance (the watcher saw it): the slow subscriber's slot was overwritten.
        while (first(yield* Queue.take(watcher).pipe(Effect.timeout("10 seconds"))) !== n) { /* an older one, read late */ }
      }
      // Let it take as many as it likes: it finds the one it held and the latest, not the 28 between.
      yield* Queue.offerAll(pulls, Array.from({ length: 30 }, () => undefined))
      while (!got.includes(30)) yield* Effect.yieldNow
      expect(got.length).toBeLessThanOrEqual(3)
      yield* Fiber.interrupt(fiber)
    }))
})
