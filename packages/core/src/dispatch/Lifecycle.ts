/**
 * Moving a stored workflow through the state machine: the one place that writes the transition,
 * publishes its event(s) and, on reaching a terminal state, deletes the workflow's uploaded input
 * files. The workflow service (cancel) and the dispatcher both move workflows through here.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import { BlobStore } from "../shared/BlobStore.js"
import type { IllegalTransition, NotFound, StorageError } from "../shared/Errors.js"
import { Transactor } from "../shared/Transactor.js"
import { summaryJson } from "../Wire.js"
import { isTerminal, type Workflow } from "../workflows/Workflow.js"
import { type NewWorkflowEvent, WorkflowEventBus } from "../workflows/WorkflowEvents.js"
import { WorkflowRepository } from "../workflows/WorkflowRepository.js"
import { applyTransition, type WorkflowTransition } from "../workflows/WorkflowStatus.js"


/** Events a transition from `before` to `after` puts on the workflow's stream. */
export const eventsFor = (before: Workflow, after: Workflow): ReadonlyArray<NewWorkflowEvent> => {
  if (before.status !== after.status) {
    const summary = summaryJson(after)
    return isTerminal(after.status)
      ? [{ type: "status", data: summary }, { type: "done", data: summary }]
      : [{ type: "status", data: summary }]
  }
  if (before.queue_number !== after.queue_number && after.queue_number !== null) {
    return [{ type: "queue", data: { queue_number: after.queue_number } }]
  }
  return []
}

/** Blob keys of a workflow's uploaded file parameters. */
export const inputBlobKeys = (w: Workflow): ReadonlyArray<string> =>
  w.workflow_params.filter(([p]) => p.startsWith("$file(")).map(([, key]) => key)

/** Deletes a finished workflow's uploaded inputs; failures are logged, never raised. */
export const deleteInputs = (w: Workflow): Effect.Effect<void, never, BlobStore> =>
  Effect.flatMap(BlobStore, (blobs) =>
    Effect.forEach(inputBlobKeys(w), (key) =>
      blobs.delete(key).pipe(
        Effect.catchAll((e) => Effect.logWarning("could not delete an input file", { workflow_id: w.id, key, error: e.message }))
      ), { discard: true }))

/** The workflow before and after a transition. */
export interface Transitioned {
  readonly before: Workflow
  readonly after: Workflow
}

/**
 * Applies `event` to workflow `id`: writes it, publishes its events in the same transaction,
 * and cleans up inputs when it reaches a terminal state.
 */
export const transition = (
  id: string,
  event: WorkflowTransition
): Effect.Effect<
  Transitioned,
  IllegalTransition | NotFound | StorageError,
  WorkflowRepository | WorkflowEventBus | Transactor | BlobStore
> =>
  Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const bus = yield* WorkflowEventBus
    const tx = yield* Transactor
    const now = yield* DateTime.now
    const result = yield* tx.withTransaction(Effect.gen(function*() {
      let before: Workflow | undefined
      const after = yield* repo.update(id, (current) => {
        before = current
        return applyTransition(current, event, now)
      })
      const events = eventsFor(before!, after)
      if (events.length > 0) yield* bus.publish(id, events)
      return { before: before!, after }
    }))
    if (isTerminal(result.after.status)) yield* deleteInputs(result.after)
    return result
  })
