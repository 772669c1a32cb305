/**
 * Moving a tracked workflow forward from where the driver last saw it. The steps depend on the
 * status (a driver that missed `queued` writes it together with `running`); when the store
 * refuses because another path moved the workflow first, the steps are worked out again from
 * the status the store reported (twice at most). The driver's copy follows every outcome, and
 * lets go of a workflow that ended.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { isTerminal, type WorkflowHead, type WorkflowOutput, type WorkflowStatus } from "../domain/Workflow.js"
import type { TransitionOutcome } from "../ports/WorkflowRepository.js"
import type { WorkflowTransition } from "../domain/WorkflowStatus.js"
import { Driving } from "./Driving.js"
import { transition } from "../usecases/Lifecycle.js"

export type Steps = readonly [WorkflowTransition, ...Array<WorkflowTransition>]

/** What `advance` ended with: the outcome of the last write, or none when no step was due. */
export type Advanced = Option.Option<TransitionOutcome>

export const advance = (
  id: string,
  stepsFrom: (w: WorkflowHead) => Steps | undefined,
  options: { readonly outputs?: ReadonlyArray<WorkflowOutput> } = {}
) =>
  Effect.gen(function*() {
    const { inFlight } = yield* Driving
    const tracked = yield* inFlight.get(id)
    if (Option.isNone(tracked)) return Option.none<TransitionOutcome>()
    let current: WorkflowHead = tracked.value.workflow
    for (let attempt = 0; attempt < 3; attempt++) {
      const steps = stepsFrom(current)
      if (steps === undefined) return Option.none<TransitionOutcome>()
      const outcome = yield* transition(id, steps, options)
      if (outcome._tag === "Applied") {
        // An ended workflow is no longer in flight here.
        if (isTerminal(outcome.workflow.status)) yield* inFlight.remove(id)
        else yield* inFlight.refresh(outcome.workflow)
        return Option.some(outcome)
      }
      if (outcome._tag === "Missing" || isTerminal(outcome.status) || outcome.status === current.status) {
        if (outcome._tag === "Missing" || isTerminal(outcome.status)) yield* inFlight.remove(id)
        return Option.some(outcome)
      }
      current = { ...current, status: outcome.status }
      yield* inFlight.refresh(current)
    }
    return Option.none<TransitionOutcome>()
  })

/** True when `advanced` left the workflow finished by someone else with `status`. */
export const endedAs = (advanced: Advanced, status: WorkflowStatus): boolean =>
  Option.isSome(advanced) && advanced.value._tag === "Refused" && advanced.value.status === status
