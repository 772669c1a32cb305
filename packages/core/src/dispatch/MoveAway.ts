/**
 * A workflow this runner cannot take (unreachable after every retry, or disabled) moves to
 * another eligible runner (one not known to lack its nodes and models), whose dispatcher the store
 * wakes; after `maxRunnersTried` runners, or when no other runner is eligible, it fails with
 * `RunnerUnavailable`.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import { AccountRepository } from "../ports/AccountRepository.js"
import { needsOf } from "../domain/Needs.js"
import { refOf, type Workflow } from "../domain/Workflow.js"
import { WorkflowTransition as T } from "../domain/WorkflowStatus.js"
import { advance } from "./Advance.js"
import { Driving } from "./Driving.js"
import { Scheduler } from "../usecases/Scheduler.js"

export const moveAway = (
  w: Pick<Workflow, "id" | "user_id" | "tags" | "dispatch_attempts" | "workflow_json" | "workflow_params" | "models">,
  reason: string
) =>
  Effect.gen(function*() {
    const driving = yield* Driving
    const failUnavailable = advance(w.id, () => [T.Failed({
      error_node: null,
      exception_type: "RunnerUnavailable",
      exception_message: `No runner could take the workflow: ${reason}`
    })])
    const next = w.dispatch_attempts + 1 >= driving.options.maxRunnersTried
      ? Option.none()
      : yield* Effect.flatMap(AccountRepository, (accounts) => accounts.findUser(w.user_id)).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.succeedNone,
          onSome: (user) =>
            Effect.map(Effect.result(Effect.flatMap(Scheduler, (s) => s.choose(user, w.tags, { exclude: [driving.ref.id], needs: needsOf(w.workflow_json, w.workflow_params), models: w.models }))), Result.getSuccess)
        }))
      )
    if (Option.isNone(next)) yield* failUnavailable
    else {
      const runner = refOf(next.value)
      yield* advance(w.id, (h) => (h.status === "accepted" || h.status === "uploaded" ? [T.Reassigned({ runner })] : undefined))
    }
    // It is another runner's now (or finished).
    yield* driving.inFlight.remove(w.id)
  })
