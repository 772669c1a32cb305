/**
 * Driving one runner (design.md sections 5 and 6), as small supervised parts over one shared
 * `Driving` state: the claim loop (Claim.ts) submits (Submit.ts); Track.ts follows the runner's
 * WebSocket; Reconcile.ts compares with `/queue` and `/history` after each (re)connection and on
 * a timer; QueuePositions.ts keeps queue numbers current; the ends of prompts are recorded by
 * Finish.ts. Every part runs in the driver's scope, so stopping the driver stops them all. It
 * returns when the runner has been idle for `idleAfter`, or when this instance loses the lease.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Queue from "effect/Queue"
import type { RunnerRef } from "../domain/Workflow.js"
import { claimLoop, renewClaims } from "./Claim.js"
import type { RunnerLease } from "../ports/Dispatch.js"
import type { DispatcherOptions } from "./DispatcherOptions.js"
import { Driving, makeDriving } from "./Driving.js"
import { refreshPositions } from "./QueuePositions.js"
import { reconcileLoop } from "./Reconcile.js"
import { track } from "./Track.js"

export const driveRunner = (
  ref: RunnerRef,
  owner: string,
  lease: RunnerLease,
  wake: Queue.Queue<void>,
  options: DispatcherOptions
) =>
  Effect.scoped(Effect.gen(function*() {
    const driving = yield* makeDriving(ref, owner, lease, wake, options)
    const target = yield* driving.refreshTarget.pipe(Effect.orElseSucceed(() => Option.none()))
    if (Option.isNone(target)) return
    const parts = Effect.gen(function*() {
      yield* Effect.forkScoped(track(target.value))
      yield* Effect.forkScoped(reconcileLoop)
      yield* Effect.forkScoped(refreshPositions)
      yield* Effect.forkScoped(renewClaims)
      yield* Effect.raceFirst(claimLoop, lease.lost)
    })
    yield* parts.pipe(Effect.provideService(Driving, driving))
  }))
