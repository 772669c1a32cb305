/**
 * The previews a driver's runner sends (sampler steps, FrameOutputs.ts tells them from outputs),
 * published to `WorkflowPreviews` at most `PREVIEWS_PER_SECOND` per workflow: the first of a
 * window goes out at once, the latest of the rest at the window's end (the newer replaces the
 * older while it waits: one pending preview per workflow, never a queue). A workflow's stored
 * preview is cleared when its run ends. Without a `WorkflowPreviews` service (a dispatcher
 * composed without one) previews are dropped, as before.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberMap from "effect/FiberMap"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import { PREVIEWS_PER_SECOND, type WorkflowPreview, WorkflowPreviews } from "../ports/WorkflowPreviews.js"

export interface LivePreviews {
  /** A preview of a tracked workflow: published now, or kept as the latest of its window. */
  readonly offer: (preview: WorkflowPreview) => Effect.Effect<void>
  /** The workflow's run ended: a waiting preview is dropped, the published one cleared. */
  readonly end: (workflowId: string) => Effect.Effect<void>
}

/** The time one preview per workflow holds the next back. */
export const PREVIEW_WINDOW = Duration.millis(1000 / PREVIEWS_PER_SECOND)

const dropped: LivePreviews = { offer: () => Effect.void, end: () => Effect.void }

/** The throttle of one driver, for the life of its scope. */
export const makeLivePreviews: Effect.Effect<LivePreviews, never, Scope.Scope> = Effect.gen(function*() {
  const service = yield* Effect.serviceOption(WorkflowPreviews)
  if (Option.isNone(service)) return dropped
  const store = service.value
  /** Workflows in a window, with the preview waiting for its end (if any). */
  const windows = new Map<string, { latest: WorkflowPreview | undefined }>()
  /** Workflows with a published preview, to clear at their end. */
  const published = new Set<string>()
  const timers = yield* FiberMap.make<string>()

  const publish = (p: WorkflowPreview) =>
    Effect.suspend(() => {
      published.add(p.workflow_id)
      return store.publish(p)
    }).pipe(Effect.catch((e) => Effect.logWarning("could not publish a preview", { workflow_id: p.workflow_id, error: e.message })))

  /** Publishes the window's waiting preview (true), or closes the window when none waits (false): one step, so no offer falls between. */
  const flush = (id: string, window: { latest: WorkflowPreview | undefined }) =>
    Effect.suspend(() => {
      const latest = window.latest
      window.latest = undefined
      if (latest !== undefined) return Effect.as(publish(latest), true)
      if (windows.get(id) === window) windows.delete(id)
      return Effect.succeed(false)
    })

  const offer = (p: WorkflowPreview) =>
    Effect.suspend(() => {
      const open = windows.get(p.workflow_id)
      if (open !== undefined) {
        open.latest = p
        return Effect.void
      }
      const window = { latest: undefined }
      windows.set(p.workflow_id, window)
      const closing = Effect.sleep(PREVIEW_WINDOW).pipe(
        Effect.andThen(Effect.repeat(flush(p.workflow_id, window), { schedule: Schedule.spaced(PREVIEW_WINDOW), while: (more) => more }))
      )
      return Effect.andThen(publish(p), FiberMap.run(timers, p.workflow_id, closing))
    })

  const end = (id: string) =>
    Effect.gen(function*() {
      windows.delete(id)
      yield* FiberMap.remove(timers, id)
      if (!published.delete(id)) return
      yield* store.clear(id).pipe(Effect.catch((e) => Effect.logWarning("could not clear a preview", { workflow_id: id, error: e.message })))
    })

  return { offer, end }
})
