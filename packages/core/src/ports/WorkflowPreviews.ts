/**
 * Live previews: the latest image a running workflow's node sent as a preview (a sampler's step,
 * as ComfyUI sends it), for subscribers that asked for them. Not workflow events: never logged,
 * never numbered, never replayed; only the latest counts, and a subscriber that has not taken
 * one when the next comes gets the next instead (one slot, overwritten). The dispatcher publishes
 * at most `PREVIEWS_PER_SECOND` per workflow (dispatch/LivePreviews.ts), so a store may write each.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { StorageError } from "../domain/Errors.js"

/** Previews published per workflow per second, at most (the latest of each half second wins). */
export const PREVIEWS_PER_SECOND = 2

/** A preview image of a running workflow. */
export interface WorkflowPreview {
  readonly workflow_id: string
  /** The node that sent it (null when the runner did not say). */
  readonly node: string | null
  /** `image/jpeg`, `image/png` or `image/webp`: the bytes as the runner sent them. */
  readonly content_type: string
  readonly image: Uint8Array
}

export class WorkflowPreviews extends Context.Service<WorkflowPreviews, {
  /** Makes `preview` its workflow's latest, and hands it to the workflow's subscribers (wherever they are connected). */
  readonly publish: (preview: WorkflowPreview) => Effect.Effect<void, StorageError>
  /** Forgets a workflow's latest preview (its run ended). */
  readonly clear: (workflowId: string) => Effect.Effect<void, StorageError>
  /**
   * The workflow's latest preview, if any, then each new one; a subscriber that falls behind gets
   * only the latest (one slot). Never ends by itself.
   */
  readonly subscribe: (workflowId: string) => Stream.Stream<WorkflowPreview, StorageError>
}>()("@wes/core/WorkflowPreviews") {}

/**
 * The subscribers of a previews store, by workflow, each with a one-slot sliding queue: `offer`
 * never blocks and overwrites what a subscriber has not taken yet, so a slow one holds one preview.
 */
export const makePreviewSlots = () => {
  const subscribers = new Map<string, Set<Queue.Queue<WorkflowPreview>>>()
  return {
    /** A slot for `workflowId` for the life of the scope; the effect takes its next preview. */
    listen: (workflowId: string): Effect.Effect<Effect.Effect<WorkflowPreview>, never, Scope.Scope> =>
      Effect.acquireRelease(
        Effect.tap(Queue.sliding<WorkflowPreview>(1), (slot) =>
          Effect.sync(() => {
            const slots = subscribers.get(workflowId) ?? new Set()
            slots.add(slot)
            subscribers.set(workflowId, slots)
          })),
        (slot) =>
          Effect.suspend(() => {
            const slots = subscribers.get(workflowId)
            slots?.delete(slot)
            if (slots?.size === 0) subscribers.delete(workflowId)
            return Queue.shutdown(slot)
          })
      ).pipe(Effect.map((slot) => Queue.take(slot))),
    /** Whether anyone here follows `workflowId`'s previews. */
    listening: (workflowId: string): boolean => subscribers.has(workflowId),
    /** The workflows followed here. */
    followed: (): ReadonlyArray<string> => [...subscribers.keys()],
    offer: (preview: WorkflowPreview): void => {
      for (const slot of subscribers.get(preview.workflow_id) ?? []) Queue.offerUnsafe(slot, preview)
    }
  }
}
