/**
 * What the unit tests of the dispatcher's parts share: one runner, a `Driving` state for it, and
 * services that fail on any call a test did not arrange (`Layer.mock`). The store's workflows
 * are a map the arranged `transition` applies plans to (core's own `planTransition`), so a test
 * sees each write a part made and the state it led to.
 */
import { AccountRepository, type DispatcherOptions, type RunnerTarget, TierPolicy, type TransitionRequest, type Workflow, type WorkflowHead } from "@wes/core"
import { defaultDispatcherOptions } from "../../src/dispatch/Dispatcher.js"
import { type RunnerLease } from "../../src/ports/Dispatch.js"
import { Scheduler } from "../../src/usecases/Scheduler.js"
import { Fixtures } from "@wes/core/testing"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import { Driving, makeDriving } from "../../src/dispatch/Driving.js"
import { applyPlan, planTransition } from "../../src/domain/WorkflowStatus.js"
import type { TransitionOutcome } from "../../src/ports/WorkflowRepository.js"

export const RUNNER = "0a5f0f0e-0000-4000-8000-000000000001"

export const runner: RunnerTarget = {
  kind: "user",
  id: RUNNER,
  name: "runner",
  endpoint: "http://runner.test",
  headers: {},
  tags: [],
  status: "active"
}

/** Tight timings: what the unit tests move the TestClock by. */
export const options: DispatcherOptions = {
  ...defaultDispatcherOptions,
  retryDelay: "1 second",
  retryDelayMax: "8 seconds",
  submitAttempts: 4,
  claimInterval: "1 second",
  idleAfter: "10 seconds"
}

export const heldLease: RunnerLease = { clientId: "wes-test-client", lost: Effect.never, held: () => true }

/** The `Scheduler` that resolves the runner (and chooses `next`, when given, for a workflow moved away). */
export const schedulerFor = (next?: RunnerTarget) =>
  Layer.mock(Scheduler, {
    resolve: () => Effect.succeed(Option.some(runner)),
    ...(next === undefined ? {} : { choose: () => Effect.succeed(next) })
  })

/** A `Driving` state for `runner`, with a socket already open unless `socketClosed`. */
export const drivingLayer = (
  over: { readonly options?: Partial<DispatcherOptions>; readonly lease?: RunnerLease; readonly socketClosed?: boolean } = {}
) =>
  Layer.effect(
    Driving,
    Effect.gen(function*() {
      const wake = yield* Queue.sliding<void>(1)
      const driving = yield* makeDriving({ kind: "user", id: RUNNER as never }, "instance-a", over.lease ?? heldLease, wake, {
        ...options,
        ...over.options
      })
      if (over.socketClosed !== true) yield* Deferred.succeed(driving.socketOpen, undefined)
      return driving
    })
  )

/**
 * Lets every fiber of the test run until it waits (a hundred turns of the scheduler). Effect 4's
 * `TestClock.adjust` waits only for the fibers its sleeps wake; Effect 3's also waited until every
 * fiber of the test was suspended, so work started at the current instant (a fork, an offer to a
 * queue) had run by the time it returned.
 */
export const settle = Effect.forEach(Array.from({ length: 100 }), () => Effect.yieldNow, { discard: true })

/** A workflow on `runner`. */
export const workflowOn = (over: Partial<Workflow> = {}): Workflow =>
  Fixtures.workflow(Fixtures.uuid(), { user_runner_id: RUNNER as never, ...over })

export const headOf = ({ workflow_json: _, ...head }: Workflow): WorkflowHead => head

/** The store's workflows as the arranged `transition` keeps them, and every request it saw. */
export class FakeWorkflows {
  readonly byId = new Map<string, Workflow>()
  readonly requests: Array<TransitionRequest> = []

  constructor(workflows: ReadonlyArray<Workflow> = []) {
    for (const w of workflows) this.byId.set(w.id, w)
  }

  status(id: string) {
    return this.byId.get(id)?.status
  }

  /** Each request's moves, by tag (`Uploaded+Queued`). */
  get moves(): Array<string> {
    return this.requests.map((r) => r.steps.map((s) => s._tag).join("+"))
  }

  readonly transition = (request: TransitionRequest): Effect.Effect<TransitionOutcome> =>
    Effect.sync(() => {
      this.requests.push(request)
      const current = this.byId.get(request.id)
      if (current === undefined) return { _tag: "Missing" }
      const next = Result.flatMap(planTransition(request.steps, request.at), (plan) => applyPlan(current, plan))
      if (Result.isFailure(next)) return { _tag: "Refused", status: current.status }
      this.byId.set(request.id, next.success)
      return { _tag: "Applied", workflow: headOf(next.success) }
    })
}

/**
 * What a retry decision reads (Retry.ts): the default tier table, and the owner's account —
 * none unless `user` is given (then the failure stands), so only a test of retries arranges one.
 */
export const retryLayer = (user?: Parameters<typeof Fixtures.user>[0]) =>
  Layer.mergeAll(
    TierPolicy.layer({}),
    Layer.mock(AccountRepository, {
      findUser: (id) => Effect.succeed(user === undefined ? Option.none() : Option.some(Fixtures.user({ ...user, id: id as never })))
    })
  )
