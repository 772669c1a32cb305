/**
 * Issue 34, item 4: the driver of an agent runner claims no new work while its agent reports less
 * free disk than `minFreeDiskBytes`, and claims again once the agent reports more; the reason is
 * the one the runner's views show (`claimBlockedReason`). A direct runner is never held.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  AccountRepository,
  BlobStore,
  type ClaimedWorkflow,
  claimBlockedReason,
  DispatchQueue,
  RunnerAgents,
  RunnerGateway,
  type RunnerTarget,
  TierPolicy,
  WorkflowEventBus,
  WorkflowRepository
} from "@wes/core"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/testing/TestClock"
import { IdGenerator } from "../../src/domain/Ids.js"
import { claimLoop } from "../../src/dispatch/Claim.js"
import { Scheduler } from "../../src/usecases/Scheduler.js"
import { drivingLayer, FakeWorkflows, runner, settle, workflowOn } from "./harness.js"

const GiB = 1024 ** 3
const agentRunner: RunnerTarget = { ...runner, connection: "agent" }

/** What the runner's agent reports: `free` bytes of disk. */
const reporting = (free: { bytes: number }) => ({
  status: () =>
    Effect.sync(() =>
      Option.some({
        agent_version: "0.1.0",
        gpu: null,
        disk: { free_bytes: free.bytes, total_bytes: 100 * GiB },
        models: [],
        model_budget_bytes: null,
        cleanup: true,
        connected: true,
        reported_at: "2026-11-28T17:00:00.000Z"
      })
    )
})

const layerFor = (target: RunnerTarget, store: FakeWorkflows, claims: Array<number>, free: { bytes: number }) =>
  Layer.mergeAll(
    Layer.mock(WorkflowRepository, {
      transition: store.transition,
      // The waiting workflow counts as unfinished work here: the held driver does not go idle.
      countInFlight: (ids) => Effect.succeed(new Map(ids.map((id) => [id, 1])))
    }),
    Layer.mock(DispatchQueue, {
      claim: (_runner, _owner, limit) =>
        Effect.sync((): ReadonlyArray<ClaimedWorkflow> => {
          claims.push(limit)
          return []
        })
    }),
    Layer.mock(RunnerGateway, {}),
    Layer.mock(BlobStore, {}),
    Layer.mock(WorkflowEventBus, {}),
    Layer.mock(IdGenerator, {}),
    Layer.mock(AccountRepository, {}),
    TierPolicy.layer({}),
    Layer.mock(RunnerAgents, { connected: () => true, ...reporting(free) })
  ).pipe(
    Layer.provideMerge(drivingLayer()),
    Layer.provideMerge(Layer.mock(Scheduler, { resolve: () => Effect.succeed(Option.some(target)) }))
  )

describe("Claiming and the agent's free disk", () => {
  it.effect("an agent runner short of disk claims nothing, and claims again once its agent reports enough", () => {
    const claims: Array<number> = []
    const free = { bytes: 2 * GiB }
    return Effect.gen(function*() {
      const loop = yield* Effect.forkChild(claimLoop)
      yield* settle
      for (let i = 0; i < 5; i++) {
        yield* TestClock.adjust("1 second")
        yield* settle
      }
      expect(claims).toEqual([])
      free.bytes = 6 * GiB
      for (let i = 0; i < 5 && claims.length === 0; i++) {
        yield* TestClock.adjust("1 second")
        yield* settle
      }
      expect(claims[0]).toBe(4)
      yield* Fiber.interrupt(loop)
    }).pipe(Effect.provide(layerFor(agentRunner, new FakeWorkflows([workflowOn()]), claims, free)))
  })

  it.effect("a direct runner claims whatever disk an agent would report", () => {
    const claims: Array<number> = []
    return Effect.gen(function*() {
      const loop = yield* Effect.forkChild(claimLoop)
      yield* settle
      expect(claims.length).toBeGreaterThan(0)
      expect(claims.every((limit) => limit === 4)).toBe(true)
      yield* Fiber.interrupt(loop)
    }).pipe(Effect.provide(layerFor(runner, new FakeWorkflows(), claims, { bytes: 0 })))
  })

  it("gives the reason the runner's views show", () => {
    const status = Option.some({ disk: { free_bytes: 2 * GiB, total_bytes: 100 * GiB }, connected: true })
    expect(claimBlockedReason(status, { minFreeDiskBytes: 5 * GiB })).toBe("Not taking work: 2 GB free disk, below 5 GB")
    expect(claimBlockedReason(status, { minFreeDiskBytes: GiB })).toBeNull()
  })
})
