/**
 * Live previews in memory: each running workflow's latest preview (cleared at its end) and the
 * subscribers of this process, each with a one-slot queue (core's `makePreviewSlots`).
 */
import { makePreviewSlots, type WorkflowPreview, WorkflowPreviews } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"

export const makeMemoryPreviews = () => {
  const latest = new Map<string, WorkflowPreview>()
  const slots = makePreviewSlots()
  return WorkflowPreviews.of({
    publish: (preview) =>
      Effect.sync(() => {
        latest.set(preview.workflow_id, preview)
        slots.offer(preview)
      }),
    clear: (workflowId) => Effect.sync(() => void latest.delete(workflowId)),
    subscribe: (workflowId) =>
      Stream.unwrap(Effect.map(slots.listen(workflowId), (take) => {
        const now = latest.get(workflowId)
        const next = Stream.fromEffectRepeat(take)
        return now === undefined ? next : Stream.concat(Stream.make(now), next)
      }))
  })
}

export const MemoryPreviews: Layer.Layer<WorkflowPreviews> = Layer.sync(WorkflowPreviews, makeMemoryPreviews)
