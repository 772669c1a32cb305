/**
 * Moving a stored workflow through the state machine: the one place that asks the store for a
 * move (one guarded store operation, its events and outputs included) and, when the move ends the
 * workflow, deletes its uploaded input files. The workflow service (cancel) and the dispatcher
 * both move workflows through here.
 */
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import { recordFinished } from "./Metrics.js"
import { BlobStore } from "../ports/BlobStore.js"
import type { StorageError } from "../domain/Errors.js"
import { isTerminal, type WorkflowHead, type WorkflowOutput } from "../domain/Workflow.js"
import type { NewWorkflowEvent } from "../ports/WorkflowEvents.js"
import { type TransitionOutcome, WorkflowRepository } from "../ports/WorkflowRepository.js"
import type { WorkflowTransition } from "../domain/WorkflowStatus.js"

/** Blob keys of a workflow's uploaded file parameters. */
export const inputBlobKeys = (w: Pick<WorkflowHead, "workflow_params">): ReadonlyArray<string> =>
  w.workflow_params.filter(([p]) => p.startsWith("$file(")).map(([, key]) => key)

/** Deletes a finished workflow's uploaded inputs; failures are logged, never raised. */
export const deleteInputs = (w: Pick<WorkflowHead, "id" | "workflow_params">): Effect.Effect<void, never, BlobStore> =>
  Effect.flatMap(BlobStore, (blobs) =>
    Effect.forEach(inputBlobKeys(w), (key) =>
      blobs.delete(key).pipe(
        Effect.catch((e) => Effect.logWarning("could not delete an input file", { workflow_id: w.id, key, error: e.message }))
      ), { discard: true }))

export interface TransitionOptions {
  /** Only if the workflow belongs to this user (a move a client asks for). */
  readonly owner?: string | undefined
  /** Outputs recorded with the move. */
  readonly outputs?: ReadonlyArray<WorkflowOutput> | undefined
  /** Events logged, when the move applies, just before the last move's (run events that came before it). */
  readonly events?: ReadonlyArray<NewWorkflowEvent> | undefined
}

/** After a move that ended the workflow: its inputs are deleted (when it had any) and its end is counted. */
const ended = (w: WorkflowHead): Effect.Effect<void, never, BlobStore> =>
  inputBlobKeys(w).length === 0 ? recordFinished(w) : Effect.andThen(deleteInputs(w), recordFinished(w))

/**
 * Applies `steps` to workflow `id` now, as one store operation, and cleans up the inputs of a
 * workflow this move finished.
 */
export const transition = (
  id: string,
  steps: readonly [WorkflowTransition, ...Array<WorkflowTransition>],
  options: TransitionOptions = {}
): Effect.Effect<TransitionOutcome, StorageError, WorkflowRepository | BlobStore> =>
  Effect.flatMap(WorkflowRepository, (repo) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.flatMap(
        repo.transition({ id, steps, at: DateTime.makeUnsafe(now), owner: options.owner, outputs: options.outputs, events: options.events }),
        (outcome) => outcome._tag === "Applied" && isTerminal(outcome.workflow.status) ? Effect.as(ended(outcome.workflow), outcome) : Effect.succeed(outcome)
      )))
