/**
 * What a batch of runner events means for the workflows a driver tracks, worked out in one pure
 * pass over the batch and the driver's in-flight entries as they were when the batch was taken:
 * the new progress and seen run of each prompt (written back in one step), the run events to
 * publish, and the few steps that need effects (a start to record, an end to record, the socket
 * opening or closing, a queue change), in the order they came. A prompt that starts and ends in
 * the same batch has only its end to record: one write walks it through `running`. Track.ts
 * carries these out; so a batch costs a handful of effects whatever the number of events in it.
 */
import * as HashMap from "effect/HashMap"
import * as Option from "effect/Option"
import type { RunnerEvent } from "../ports/RunnerGateway.js"
import type { NewWorkflowEvent } from "../ports/WorkflowEvents.js"
import type { WorkflowPreview } from "../ports/WorkflowPreviews.js"
import { isPreview } from "./FrameOutputs.js"
import type { Followed, Tracked } from "./InFlight.js"
import { advanceProgress, type PromptProgress, progressPercent, startProgress } from "./Progress.js"
import { type SeenHistory, seeRun, seenHistory, seenWhole, startRun } from "./SeenRun.js"

/** A step of a batch that needs effects. */
export type Step =
  | { readonly _tag: "Connected" | "Disconnected" | "QueueChanged" }
  | { readonly _tag: "Started"; readonly id: string; readonly at: number | null }
  /** `seen`: the end as the socket showed it, when it showed the whole run (else the history is read). */
  | { readonly _tag: "Done"; readonly id: string; readonly leading: ReadonlyArray<NewWorkflowEvent>; readonly seen: SeenHistory | undefined }

export interface Pass {
  readonly followed: ReadonlyMap<string, Followed>
  /** Run events of prompts still running, per workflow, in order. */
  readonly publish: ReadonlyMap<string, ReadonlyArray<NewWorkflowEvent>>
  readonly steps: ReadonlyArray<Step>
  /** The latest preview image of each tracked workflow in the batch (FrameOutputs.ts's `isPreview`). */
  readonly previews: ReadonlyMap<string, WorkflowPreview>
}

/**
 * The pass over `events`. `graphOf`: the node ids of a tracked prompt's graph (noted at its claim,
 * or read beforehand for an inherited one); undefined skips its progress (its graph is unknown).
 */
export const eventPass = (
  events: ReadonlyArray<RunnerEvent>,
  tracked: HashMap.HashMap<string, Tracked>,
  graphOf: (t: Tracked) => ReadonlyArray<string> | undefined
): Pass => {
  const followed = new Map<string, Followed>()
  const publish = new Map<string, Array<NewWorkflowEvent>>()
  const steps: Array<Step> = []
  const previews = new Map<string, WorkflowPreview>()
  /** Where each prompt's start is among `steps`, and the starts dropped because the end came too. */
  const startAt = new Map<string, number>()
  const dropped = new Set<number>()
  const entry = (id: string | null): Tracked | undefined =>
    id === null ? undefined : Option.getOrUndefined(HashMap.get(tracked, id))
  const current = (t: Tracked): Followed => followed.get(t.workflow.id) ?? { progress: t.progress, run: t.run }
  const set = (t: Tracked, change: Partial<Followed>) => followed.set(t.workflow.id, { ...current(t), ...change })
  /** The progress after `event`, or undefined when the graph is unknown. */
  const progressed = (t: Tracked, event: RunnerEvent): PromptProgress | undefined => {
    const before = current(t).progress
    const start = before === undefined ? graphOf(t) : undefined
    if (before === undefined && start === undefined) return undefined
    const next = advanceProgress(before ?? startProgress(start!), event)
    set(t, { progress: next })
    return next
  }
  const note = (t: Tracked, event: RunnerEvent, data: (percent: number) => NewWorkflowEvent) => {
    const next = progressed(t, event)
    if (next === undefined) return
    const list = publish.get(t.workflow.id)
    if (list === undefined) publish.set(t.workflow.id, [data(progressPercent(next))])
    else list.push(data(progressPercent(next)))
  }
  /**
   * A (re)connection or an unreadable message: what was seen of the runs in progress may miss
   * something. A run seen to its terminal message is whole and stays (its end may be recorded later).
   */
  const forgetRuns = () => {
    for (const t of HashMap.values(tracked)) {
      const run = current(t).run
      if (run !== undefined && !seenWhole(run)) set(t, { run: undefined })
    }
  }
  const see = (t: Tracked | undefined, event: RunnerEvent) => {
    const run = t === undefined ? undefined : current(t).run
    if (t === undefined || run === undefined) return
    const next = seeRun(run, event, t.frames)
    // A preview leaves the run as it was: nothing to write back.
    if (next !== run) set(t, { run: next })
  }
  for (const event of events) {
    switch (event._tag) {
      case "Connected":
      case "Disconnected":
        forgetRuns()
        steps.push({ _tag: event._tag })
        break
      case "Unreadable":
        forgetRuns()
        break
      case "QueueChanged":
        steps.push({ _tag: "QueueChanged" })
        break
      case "ExecutionStart": {
        const t = entry(event.prompt_id)
        if (t === undefined) break
        const graph = graphOf(t)
        set(t, { run: startRun(event.timestamp), ...(graph === undefined ? {} : { progress: startProgress(graph) }) })
        startAt.set(event.prompt_id, steps.length)
        steps.push({ _tag: "Started", id: event.prompt_id, at: event.timestamp })
        break
      }
      case "Executing": {
        const t = entry(event.prompt_id)
        if (t !== undefined) note(t, event, (percent) => ({ type: "executing", data: { node: event.node, percent } }))
        break
      }
      case "Progress": {
        const t = entry(event.prompt_id)
        if (t !== undefined) {
          note(t, event, (percent) => ({ type: "progress", data: { node: event.node, value: event.value, max: event.max, percent } }))
        }
        break
      }
      case "ExecutionCached":
      case "ProgressState": {
        // They only move the percent that the next executing / progress event carries.
        const t = entry(event.prompt_id)
        if (t !== undefined) progressed(t, event)
        break
      }
      case "Executed": {
        const t = entry(event.prompt_id)
        if (t !== undefined) progressed(t, event)
        see(t, event)
        break
      }
      case "ImageFrame": {
        const t = entry(event.prompt_id)
        if (t !== undefined && isPreview(t.frames, event.node)) {
          previews.set(t.workflow.id, { workflow_id: t.workflow.id, node: event.node, content_type: event.image_type, image: event.image })
        }
        see(t, event)
        break
      }
      case "ExecutionSuccess":
      case "ExecutionError":
      case "ExecutionInterrupted":
        see(entry(event.prompt_id), event)
        break
      case "PromptDone": {
        const leading = publish.get(event.prompt_id) ?? []
        publish.delete(event.prompt_id)
        previews.delete(event.prompt_id)
        const t = entry(event.prompt_id)
        if (t === undefined) break
        // Its start in the same pass is written with its end (Finish.ts walks every status it missed).
        const start = startAt.get(event.prompt_id)
        if (start !== undefined) {
          startAt.delete(event.prompt_id)
          dropped.add(start)
        }
        // The run stays with the entry until its end is recorded: a path that records it from the
        // history instead (reconciliation) still has the images it sent as frames.
        steps.push({ _tag: "Done", id: event.prompt_id, leading, seen: seenHistory(current(t).run) })
        break
      }
      default:
        break
    }
  }
  return { followed, publish, previews, steps: dropped.size === 0 ? steps : steps.filter((_, i) => !dropped.has(i)) }
}
