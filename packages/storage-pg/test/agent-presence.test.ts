/**
 * Agent presence across instances (issue 34): two stores (two instance ids) on one schema, as two
 * `wes serve` processes. The instance an agent is connected to drives its runner: the other does
 * not acquire it while that presence is live, and taking the presence takes the runner's lease
 * from whoever drove it. The status the agent reported is read from either instance.
 */
import { describe, expect, it } from "@effect/vitest"
import { AgentPresence, type AgentStatus, RunnerOwnership } from "@wes/core"
import { Fixtures as F } from "@wes/core/testing"
import type { PgRunnerOwnershipOptions } from "@wes/storage-pg"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as TestClock from "effect/testing/TestClock"
import { freshSchema, storeOn } from "./harness.js"

const instance = (schema: string, name: string, leases: PgRunnerOwnershipOptions = {}) =>
  Effect.gen(function*() {
    const scope = yield* Scope.make()
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void))
    const context = yield* Layer.buildWithScope(storeOn(schema, { applicationName: `wes-test-${name}-${schema}`, runnerLeases: leases }), scope)
    return { ownership: Context.get(context, RunnerOwnership), presence: Context.get(context, AgentPresence) }
  })

const status: AgentStatus = {
  agent_version: "1.0.0",
  gpu: { name: "RTX 4090", vram_total_bytes: 24e9, vram_free_bytes: 20e9 },
  disk: { free_bytes: 1e11, total_bytes: 2e11 },
  models: [],
  model_budget_bytes: null,
  cleanup: true
}

describe("agent presence across instances", () => {
  it.live("a runner whose agent is connected to A is not acquired by B; once A releases it, B may drive it", () =>
    Effect.gen(function*() {
      const schema = yield* freshSchema
      const a = yield* instance(schema, "a")
      const b = yield* instance(schema, "b")
      const r = F.uuid()
      yield* a.presence.take(r, a.ownership.instanceId, 15_000)
      expect(yield* Effect.scoped(b.ownership.acquire(r))).toEqual(Option.none())
      expect(Option.isSome(yield* Effect.scoped(a.ownership.acquire(r)))).toBe(true)
      // A direct runner (no presence) is unaffected.
      expect(Option.isSome(yield* Effect.scoped(b.ownership.acquire(F.uuid())))).toBe(true)

      yield* a.presence.release(r, a.ownership.instanceId)
      expect(Option.isSome(yield* Effect.scoped(b.ownership.acquire(r)))).toBe(true)
    }))

  it.effect("taking the presence ends the lease of the instance driving the runner, which then loses it", () =>
    Effect.gen(function*() {
      const schema = yield* freshSchema
      // B renews on its TestClock: its next renewal comes when the test moves the clock.
      const b = yield* instance(schema, "b", { leaseTime: "30 seconds", renewInterval: "100 millis" })
      const a = yield* instance(schema, "a")
      const r = F.uuid()
      const leaseB = Option.getOrThrow(yield* b.ownership.acquire(r))
      yield* a.presence.take(r, a.ownership.instanceId, 15_000)
      yield* TestClock.adjust("100 millis")
      yield* leaseB.lost
      const leaseA = Option.getOrThrow(yield* Effect.scoped(a.ownership.acquire(r)))
      expect(leaseA.clientId).not.toBe(leaseB.clientId)
    }))

  it.live("keeps the latest status with when it came, read from any instance; only the holder reports and renews", () =>
    Effect.gen(function*() {
      const schema = yield* freshSchema
      const a = yield* instance(schema, "a")
      const b = yield* instance(schema, "b")
      const r = F.uuid()
      expect(yield* b.presence.find(r)).toEqual(Option.none())
      yield* a.presence.take(r, a.ownership.instanceId, 15_000)
      yield* a.presence.report(r, a.ownership.instanceId, status)
      yield* b.presence.report(r, b.ownership.instanceId, { ...status, agent_version: "from B" })
      const seen = Option.getOrThrow(yield* b.presence.find(r.toUpperCase()))
      expect(seen).toMatchObject({ runner_id: r, owner: a.ownership.instanceId, live: true, status })
      expect(Date.parse(seen.reported_at!)).toBeGreaterThan(Date.now() - 60_000)
      expect(yield* b.presence.renew(r, b.ownership.instanceId, 15_000)).toBe(false)
      expect(yield* a.presence.renew(r, a.ownership.instanceId, 15_000)).toBe(true)

      // B takes it over (the agent connected to B): A's renewal now fails; A's release changes nothing.
      yield* b.presence.take(r, b.ownership.instanceId, 15_000)
      expect(yield* a.presence.renew(r, a.ownership.instanceId, 15_000)).toBe(false)
      yield* a.presence.release(r, a.ownership.instanceId)
      expect(Option.getOrThrow(yield* a.presence.find(r))).toMatchObject({ owner: b.ownership.instanceId, live: true, status })
      yield* b.presence.release(r, b.ownership.instanceId)
      expect(Option.getOrThrow(yield* a.presence.find(r))).toMatchObject({ live: false, status })
    }))
})
