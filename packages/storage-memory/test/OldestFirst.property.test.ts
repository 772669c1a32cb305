import type { Workflow, WorkflowId } from "@wes/core"
import { Fixtures as F } from "@wes/core/testing"
import { describe, expect, it } from "@effect/vitest"
import * as DateTime from "effect/DateTime"
import * as Schema from "effect/Schema"
import { OldestFirst } from "../src/OldestFirst.js"

/** A waiting workflow created at `at` (ms), with an id that breaks ties. */
const waiting = (at: number, n: number): Workflow =>
  ({ ...F.workflow(F.uuid()), id: `w-${String(n).padStart(6, "0")}` as WorkflowId, created_at: DateTime.makeUnsafe(at) })

const oldestFirst = (ws: ReadonlyArray<Workflow>) =>
  [...ws].sort((a, b) => a.created_at.epochMilliseconds - b.created_at.epochMilliseconds || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))

describe("a waiting queue, oldest first", () => {
  // Each step inserts a new workflow (created at one of a few times, so ties occur) or removes one
  // already in (the oldest, as claims do, or any other).
  const Step = Schema.Union([
    Schema.Struct({ insert: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 20 })) }),
    Schema.Struct({ remove: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)), oldest: Schema.Boolean })
  ])
  it.prop("holds what was inserted and not removed, oldest first, whatever the order of inserts and removals", {
    steps: Schema.Array(Step).check(Schema.isMaxLength(3000))
  }, ({ steps }) => {
    const queue = new OldestFirst()
    let held: Array<Workflow> = []
    let n = 0
    for (const s of steps) {
      if ("insert" in s) {
        const w = waiting(1_000 + s.insert, n++)
        queue.insert(w)
        held.push(w)
      } else if (held.length > 0) {
        const sorted = oldestFirst(held)
        const w = s.oldest ? sorted[0]! : sorted[s.remove % sorted.length]!
        expect(queue.remove(w)).toBe(true)
        held = held.filter((x) => x !== w)
      }
    }
    expect([...queue].map((w) => w.id)).toEqual(oldestFirst(held).map((w) => w.id))
    expect(queue.length).toBe(held.length)
  }, { timeout: 60_000, arbitrary: { runs: 200, size: 3000 } })

  it("takes 12,000 oldest-first removals from a backlog of 20,000 in order (past the cut of its dead front), then still finds, replaces and appends", () => {
    const queue = new OldestFirst()
    const all = Array.from({ length: 20_000 }, (_, i) => waiting(1_000 + i, i))
    for (const w of all) queue.insert(w)
    for (const w of all.slice(0, 12_000)) expect(queue.remove(w)).toBe(true)
    expect(queue.length).toBe(8_000)
    expect([...queue][0]!.id).toBe(all[12_000]!.id)
    // Already gone, or never in: not found.
    expect(queue.remove(all[0]!)).toBe(false)
    expect(queue.remove(waiting(500, 99_999))).toBe(false)
    // A record swapped where it stands (a claim marking it), found by the new record afterwards.
    const marked = { ...all[15_000]! }
    expect(queue.replace(all[15_000]!, marked)).toBe(true)
    expect(queue.replace(all[15_000]!, marked)).toBe(false)
    expect(queue.remove(marked)).toBe(true)
    const newest = waiting(1_000_000, 100_000)
    queue.insert(newest)
    const ids = [...queue].map((w) => w.id)
    expect(ids).toHaveLength(8_000)
    expect(ids.at(-1)).toBe(newest.id)
    expect(ids).not.toContain(all[15_000]!.id)
  })
})
