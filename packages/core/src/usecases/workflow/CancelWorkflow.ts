/**
 * Cancel: one guarded store write (only the owner's workflow, only while unfinished), then a
 * best-effort request to the runner to drop the prompt; the runner's tracker removes prompts of
 * cancelled workflows too, so nothing depends on this request arriving.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { User } from "../../domain/Account.js"
import { transition } from "../Lifecycle.js"
import { Scheduler } from "../Scheduler.js"
import { RunnerGateway } from "../../ports/RunnerGateway.js"
import { BlobStore } from "../../ports/BlobStore.js"
import { Conflict, WorkflowNotFound } from "../../domain/Errors.js"
import { isUuid } from "../../domain/Ids.js"
import { runnerOf } from "../../domain/Workflow.js"
import { WorkflowRepository } from "../../ports/WorkflowRepository.js"
import { WorkflowTransition } from "../../domain/WorkflowStatus.js"

/** How long cancel waits for the runner before leaving the rest to the tracker. */
const CANCEL_ON_RUNNER_TIMEOUT = Duration.seconds(5)

export const makeCancelWorkflow = Effect.gen(function*() {
  const repo = yield* WorkflowRepository
  const blobs = yield* BlobStore
  const scheduler = yield* Scheduler
  const gateway = yield* RunnerGateway

  const cancel = (user: User, id: string) =>
    Effect.gen(function*() {
      if (!isUuid(id)) return yield* Effect.fail(new WorkflowNotFound())
      const outcome = yield* transition(id, [WorkflowTransition.Cancelled()], { owner: user.id })
      if (outcome._tag === "Missing") return yield* Effect.fail(new WorkflowNotFound())
      if (outcome._tag === "Refused") return yield* Effect.fail(new Conflict({ message: `Workflow is already ${outcome.status}` }))
      const w = outcome.workflow
      // A prompt may be on the runner once it was claimed for submission (submitted_at) or queued.
      const ref = runnerOf(w)
      if ((w.prompt_id !== null || w.submitted_at !== null) && ref !== undefined) {
        yield* scheduler.resolve(ref).pipe(
          Effect.flatMap(Option.match({
            onNone: () => Effect.void,
            onSome: (target) => gateway.cancel(target, w.prompt_id ?? w.id)
          })),
          Effect.timeout(CANCEL_ON_RUNNER_TIMEOUT),
          Effect.catch((e) => Effect.logWarning("could not cancel on the runner", { workflow_id: id, error: String(e) }))
        )
      }
      return w
    }).pipe(Effect.provideService(WorkflowRepository, repo), Effect.provideService(BlobStore, blobs))

  return { cancel }
})
