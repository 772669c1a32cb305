/**
 * The claim loop of a driver: whenever it is woken (new work announced, or claimable work found by
 * the dispatcher's sweep: claims of dead instances expire silently), it claims as many waiting
 * workflows as it has free slots, in one store operation, in the store's scheduling order
 * (dispatch/Ordering.ts), and submits each beside the loop. A slot is a prompt kept on the runner
 * (`concurrencyPerRunner`: being submitted, or queued or running there): the rest waits in WES,
 * where priorities and fair share decide, not in ComfyUI's first-come queue. With every slot
 * busy it waits for one to free (a submission or a workflow ended); a claim that filled every
 * slot is followed by another at once. So an idle runner costs one claim per wake-up. It
 * returns once the runner has had no work for `idleAfter`, which it checks on a wake-up of its
 * own every third of `idleAfter` (at least `claimInterval`). Claims being submitted are renewed
 * every third of their lease. An agent runner whose agent reports too little free disk claims
 * nothing meanwhile (ClaimHealth.ts).
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import type { Workflow } from "../domain/Workflow.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"
import { type ClaimedWorkflow, DispatchQueue } from "../ports/Dispatch.js"
import { Driving, type DrivingShape } from "./Driving.js"
import { frameNodesOf } from "./FrameOutputs.js"
import { watching } from "./LostRunner.js"
import { submit } from "./Submit.js"
import { makeClaimHold } from "./ClaimHealth.js"

const headOf = ({ workflow_json: _, ...head }: Workflow) => head

/** Submits one claimed workflow, then gives its claim back if it is still waiting, and frees its slot. */
const submitClaimed = (driving: DrivingShape, dispatch: DispatchQueue["Service"], claimed: ClaimedWorkflow) => {
  const id = claimed.workflow.id
  const after = (recorded: Deferred.Deferred<void>) =>
    Effect.gen(function*() {
      yield* Deferred.succeed(recorded, undefined)
      const left = yield* driving.inFlight.get(id)
      if (Option.isSome(left) && left.value.phase === "submitting") {
        yield* driving.inFlight.remove(id)
        yield* Effect.ignore(dispatch.release([id], driving.owner))
      }
      yield* Queue.offer(driving.slotFreed, undefined)
    })
  return Effect.flatMap(
    driving.inFlight.submitting(headOf(claimed.workflow), Object.keys(claimed.workflow.workflow_json), frameNodesOf(claimed.workflow.workflow_json)),
    (recorded) => driving.fork("could not submit a workflow", Effect.ensuring(submit(claimed), after(recorded)))
  )
}

/** Claims and submits until the runner has been idle for `idleAfter`. */
export const claimLoop = Effect.scoped(Effect.gen(function*() {
  const driving = yield* Driving
  const dispatch = yield* DispatchQueue
  const repo = yield* WorkflowRepository
  const { options } = driving
  const leaseMs = Duration.toMillis(options.claimLease)
  const agingMs = Duration.toMillis(options.priorityAging)
  // A wake-up of its own now and then, to notice that the runner went idle (no timeout per wait:
  // each costs a fiber and a timer). Jittered (80-120 %), so drivers started together drift apart.
  const idleCheck = Duration.millis(Math.max(Duration.toMillis(options.claimInterval), Duration.toMillis(options.idleAfter) / 3))
  yield* Effect.forkScoped(Effect.repeat(Queue.offer(driving.wake, undefined), Schedule.spaced(idleCheck).pipe(Schedule.jittered)))
  // An agent runner short of disk claims nothing until its agent reports more (ClaimHealth.ts).
  const hold = yield* makeClaimHold
  let idleSince: number | undefined
  for (;;) {
    const held = (yield* hold) !== null
    const free = held ? 0 : options.concurrencyPerRunner - (yield* driving.inFlight.load)
    const claimed = free <= 0 ? [] : yield* dispatch.claim(driving.ref.id, driving.owner, free, leaseMs, agingMs).pipe(
      Effect.catch((e) => Effect.as(Effect.logWarning("could not claim work", { runner_id: driving.ref.id, error: e.message }), []))
    )
    for (const c of claimed) yield* submitClaimed(driving, dispatch, c)
    if (claimed.length > 0 && claimed.length === free) continue
    // Waiting for a runner it gave up on to answer (LostRunner.ts) is not idle either.
    if (claimed.length > 0 || (free <= 0 && !held) || (yield* driving.inFlight.all).length > 0 || (yield* watching)) idleSince = undefined
    else {
      // Nothing claimed, nothing in flight: idle, unless the store still has unfinished work here.
      const now = yield* Clock.currentTimeMillis
      const load = yield* repo.countInFlight([driving.ref.id]).pipe(Effect.orElseSucceed(() => new Map([[driving.ref.id, 1]])))
      if ((load.get(driving.ref.id) ?? 0) > 0) idleSince = undefined
      else if (idleSince === undefined) idleSince = now
      else if (now - idleSince >= Duration.toMillis(options.idleAfter)) return
    }
    // Held: look again after a claim interval (the agent reports its disk on its own schedule).
    if (held) yield* Effect.timeoutOption(Queue.take(driving.wake), options.claimInterval)
    else yield* Queue.take(free > 0 ? driving.wake : driving.slotFreed)
  }
}))

/** Renews the claims of the workflows being submitted, every third of the lease. */
export const renewClaims = Effect.gen(function*() {
  const driving = yield* Driving
  const dispatch = yield* DispatchQueue
  const leaseMs = Duration.toMillis(driving.options.claimLease)
  const renew = Effect.gen(function*() {
    const submitting = (yield* driving.inFlight.all).filter((t) => t.phase === "submitting").map((t) => t.workflow.id as string)
    if (submitting.length > 0) yield* dispatch.renew(submitting, driving.owner, leaseMs)
  }).pipe(Effect.catch((e) => Effect.logWarning("could not renew claims", { runner_id: driving.ref.id, error: e.message })))
  yield* Effect.repeat(renew, Schedule.spaced(Duration.millis(Math.max(1000, leaseMs / 3))))
})
