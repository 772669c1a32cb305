import { describe, expect, it } from "@effect/vitest"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { makeWakeUpSlot, subscribeFromLog, type WakeUpSlot, type WorkflowEvent } from "../src/ports/WorkflowEvents.js"

/** A log in an array, its reads counted, and one subscriber's wake-up slot the test offers to. */
const harness = Effect.sync(() => {
  const log: Array<WorkflowEvent> = []
  const reads = { count: 0 }
  let slot: WakeUpSlot | undefined
  const read = (_: string, afterSeq: number, limit: number) =>
    Effect.sync(() => {
      reads.count++
      return log.filter((e) => e.seq > afterSeq).slice(0, limit)
    })
  const listen = () => Effect.map(makeWakeUpSlot, (s) => ((slot = s), s.take))
  const append = (n: number): ReadonlyArray<WorkflowEvent> => {
    const added: Array<WorkflowEvent> = []
    for (let i = 0; i < n; i++) {
      added.push({ workflow_id: "w", seq: log.length + 1, type: "progress", data: log.length + 1, created_at: DateTime.makeUnsafe(0) })
      log.push(added[added.length - 1]!)
    }
    return added
  }
  return { subscribe: subscribeFromLog(read, listen), reads, append, offer: (events: ReadonlyArray<WorkflowEvent> | undefined) => slot!.offer(events) }
})

const seqs = (c: ReadonlyArray<WorkflowEvent>) => c.map((e) => e.seq)

/** Waits until `condition` holds (checked every millisecond, for 5 s at most). */
const until = (condition: () => boolean) =>
  Effect.sync(condition).pipe(
    Effect.repeat({ until: (ok) => ok, schedule: Schedule.spaced("1 millis") }),
    Effect.timeout("5 seconds")
  )

describe("subscribeFromLog", () => {
  it.live("takes the events a wake-up carries without reading the log when they follow the last one seen", () =>
    Effect.gen(function*() {
      const h = yield* harness
      const seen: Array<number> = []
      h.append(2)
      const got = yield* h.subscribe("w", 0).pipe(Stream.tap((e) => Effect.sync(() => seen.push(e.seq))), Stream.take(6), Stream.runCollect, Effect.forkChild)
      // Level with the log: it read 1-2, then nothing, and waits.
      yield* until(() => h.reads.count === 2)
      h.offer(h.append(1))
      yield* until(() => seen.includes(3))
      h.offer(h.append(3))
      expect(seqs(yield* Fiber.join(got))).toEqual([1, 2, 3, 4, 5, 6])
      expect(h.reads.count).toBe(2)
    }))

  it.live("reads the log after a gap, a wake-up without events, or wake-ups merged in the slot", () =>
    Effect.gen(function*() {
      const h = yield* harness
      const seen: Array<number> = []
      const got = yield* h.subscribe("w", 0).pipe(Stream.tap((e) => Effect.sync(() => seen.push(e.seq))), Stream.take(7), Stream.runCollect, Effect.forkChild)
      yield* until(() => h.reads.count === 1)
      // A gap: events 1-2 were never announced; 3 was.
      h.append(2)
      h.offer(h.append(1))
      yield* until(() => seen.includes(3))
      // No events carried.
      h.append(1)
      h.offer(undefined)
      yield* until(() => seen.includes(4))
      // Three publishes before the subscriber looks: the slot keeps one, the others are merged.
      h.offer(h.append(1))
      h.offer(h.append(1))
      h.offer(h.append(1))
      expect(seqs(yield* Fiber.join(got))).toEqual([1, 2, 3, 4, 5, 6, 7])
    }))
})
