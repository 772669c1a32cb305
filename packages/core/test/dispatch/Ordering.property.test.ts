/**
 * Properties of the scheduling order (issue 17): no starvation, fair share within its bound,
 * round robin among equals, priority first. Random waiting sets of a few users, random loads.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Arbitrary from "effect/Arbitrary"
import * as Schema from "effect/Schema"
import { orderWaiting, type Waiting } from "../../src/domain/Ordering.js"
import type { Priority } from "../../src/domain/Workflow.js"

const AGING = 60_000
const NOW = 10_000_000

const integer = (minimum: number, maximum: number) => Arbitrary.schema(Schema.Int.check(Schema.isBetween({ minimum, maximum })))
const priority: Arbitrary.Arbitrary<Priority> = Arbitrary.schema(Schema.Literals(["low", "normal", "high"]))
const user = Arbitrary.schema(Schema.Literals(["u1", "u2", "u3", "u4", "u5"]))

/** Waiting workflows created within the last `maxAge` ms, with unique ids. */
const waitingSet = (maxAge: number, p: Arbitrary.Arbitrary<Priority> = priority) =>
  Arbitrary.array(Arbitrary.all({ user_id: user, priority: p, age: integer(0, maxAge) }), { minLength: 1, maxLength: 60 }).pipe(
    Arbitrary.map((xs): Array<Waiting> => xs.map((x, i) => ({ id: `w${String(i).padStart(3, "0")}`, user_id: x.user_id, priority: x.priority, created_at: NOW - x.age })))
  )

/** Each user's workflows on the runner: some users, each with 0 to 6 (a user absent has none). */
const loads = Arbitrary.array(Arbitrary.all([user, integer(0, 6)])).pipe(Arbitrary.map((entries) => new Map<string, number>(entries)))

/** Waiting sets grow up to their 60 workflows (the checker's default size would stop at 10). */
const checks = { arbitrary: { size: 60 } }

const position = (order: ReadonlyArray<{ readonly workflow: Waiting }>, id: string) => order.findIndex((r) => r.workflow.id === id)

describe("orderWaiting", () => {
  it.prop("no starvation: a workflow that has waited three aging periods is ahead of every newcomer, whatever its priority and load", [waitingSet(AGING - 1), loads, priority, user], ([newcomers, onRunner, p, u]) => {
    const old: Waiting = { id: "old", user_id: u, priority: p, created_at: NOW - 3 * AGING }
    const order = orderWaiting([...newcomers, old], onRunner, NOW, AGING)
    const at = position(order, "old")
    // Only workflows of its own user that are older could be ahead; newcomers are younger.
    expect(at).toBe(0)
  }, checks)

  it.prop("fair share: of equal priority, a user's workflows ahead of another user's first are bounded by the difference of their loads", [waitingSet(AGING - 1, Arbitrary.Constant("normal")), loads], ([waiting, onRunner]) => {
    const order = orderWaiting(waiting, onRunner, NOW, AGING)
    const users = new Set(waiting.map((w) => w.user_id))
    for (const a of users) {
      for (const b of users) {
        if (a === b) continue
        const firstOfB = order.findIndex((r) => r.workflow.user_id === b)
        const aheadOfB = order.slice(0, firstOfB).filter((r) => r.workflow.user_id === a).length
        const bound = Math.max(0, (onRunner.get(b) ?? 0) - (onRunner.get(a) ?? 0) + 1)
        expect(aheadOfB).toBeLessThanOrEqual(bound)
      }
    }
  }, checks)

  it.prop("a burst of 1,000 from one user delays another user's single workflow by at most one of the burst", [integer(0, 8), integer(0, 999)], ([burstOnRunner, lateBy]) => {
    const burst: Array<Waiting> = Array.from({ length: 1000 }, (_, i) => ({ id: `a${i}`, user_id: "a", priority: "normal", created_at: NOW - 1000 + i }))
    const single: Waiting = { id: "b", user_id: "b", priority: "normal", created_at: NOW - 1000 + lateBy }
    const order = orderWaiting([...burst, single], new Map([["a", burstOnRunner]]), NOW, AGING)
    // With work of its own on the runner the burst waits; otherwise its oldest goes first, then b.
    expect(position(order, "b")).toBe(burstOnRunner === 0 ? 1 : 0)
  }, checks)

  it.prop("round robin among equals: users with equal loads take turns, each in its own age order", [waitingSet(AGING - 1, Arbitrary.Constant("normal"))], ([waiting]) => {
    const order = orderWaiting(waiting, new Map(), NOW, AGING)
    const counts = new Map<string, number>()
    for (const r of order) counts.set(r.workflow.user_id, (counts.get(r.workflow.user_id) ?? 0) + 1)
    // In every prefix, two users that both still have work differ by at most one workflow.
    const taken = new Map<string, number>()
    for (const r of order) {
      taken.set(r.workflow.user_id, (taken.get(r.workflow.user_id) ?? 0) + 1)
      for (const n of taken.values()) {
        for (const [v, m] of taken) {
          if ((counts.get(v) ?? 0) > m) expect(n - m).toBeLessThanOrEqual(1)
        }
      }
    }
    for (const u of counts.keys()) {
      const mine = order.filter((r) => r.workflow.user_id === u).map((r) => r.workflow.created_at)
      expect(mine).toEqual([...mine].sort((x, y) => x - y))
    }
  }, checks)

  it.prop("priority first: among workflows that have not aged, every high goes before every normal, every normal before every low", [waitingSet(AGING - 1), loads], ([waiting, onRunner]) => {
    const order = orderWaiting(waiting, onRunner, NOW, AGING)
    const level = { high: 2, normal: 1, low: 0 } as const
    const levels = order.map((r) => level[r.workflow.priority])
    expect(levels).toEqual([...levels].sort((x, y) => y - x))
  }, checks)
})
