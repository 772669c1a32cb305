/**
 * What the runner's WebSocket showed of one prompt's run, from its `execution_start` on: the
 * output files of its `executed` messages and its terminal message. ComfyUI writes the history
 * from the same messages (the outputs are each node's last `executed` output, the timestamps and
 * the error those of `execution_start` and of the terminal message) before it says the prompt is
 * done (`executing {node: null}`), so a run seen whole gives the end that `/history/{id}` would,
 * without reading it (checked against recordings of a real ComfyUI in runner-client's tests).
 *
 * Seen whole means: started and ended on one connection, with every `executed` message carrying
 * its files and no undecodable message in between. Anything less, and the driver reads the
 * history as before (Track.ts clears what it saw of unfinished runs at every (re)connection).
 *
 * It also keeps the images the run's nodes sent as frames that may be outputs (FrameOutputs.ts):
 * the history never lists them, so only a run seen whole has them all.
 */
import type { OutputFile, PromptHistory, RunnerEvent } from "../ports/RunnerGateway.js"
import { FRAME_OUTPUT_LIMIT, type FrameImage, type FrameNodes, mayBeOutput, type SeenFrames } from "./FrameOutputs.js"

export interface SeenRun {
  /** The runner's timestamp of `execution_start` (Unix ms). */
  readonly started_at: number | null
  /** The files of each node's last `executed` message, by node id (a null-prototype object: key order as the history's). */
  readonly files: Readonly<Record<string, ReadonlyArray<OutputFile>>>
  /** An `executed` message without its files was seen: the history must be read. */
  readonly partial: boolean
  /** The terminal message, once seen. */
  readonly end?: Pick<PromptHistory, "outcome" | "completed_at" | "error"> | undefined
  /** Frame images that may be outputs, in the order they came, and their bytes. */
  readonly frames: ReadonlyArray<FrameImage>
  readonly frameBytes: number
  /** A frame image was not kept: the run sent more than `FRAME_OUTPUT_LIMIT` bytes of them. */
  readonly framesOverLimit: boolean
}

/** The end of a prompt as the socket showed it whole, with the images its nodes sent as frames. */
export interface SeenHistory extends PromptHistory {
  /** Absent for an end read from `/history/{id}`, which lists no frame. */
  readonly frames?: SeenFrames | undefined
}

/** A run whose `execution_start` (with its timestamp) was just seen. */
export const startRun = (startedAt: number | null): SeenRun => ({
  started_at: startedAt,
  files: Object.create(null),
  partial: false,
  frames: [],
  frameBytes: 0,
  framesOverLimit: false
})

/** The run with the frames of `node` dropped: it listed files, so they were its previews. */
const dropFrames = (run: SeenRun, node: string): SeenRun => {
  if (!run.frames.some((f) => f.node === node)) return run
  const frames = run.frames.filter((f) => f.node !== node)
  return { ...run, frames, frameBytes: frames.reduce((n, f) => n + f.image.length, 0) }
}

/**
 * The run after one more event of its prompt (events of other kinds change nothing). `nodes`:
 * which of the prompt's nodes may send outputs as frames (unknown: no frame is kept).
 */
export const seeRun = (run: SeenRun, event: RunnerEvent, nodes?: FrameNodes): SeenRun => {
  switch (event._tag) {
    case "ImageFrame": {
      if (nodes === undefined || event.node === null || !mayBeOutput(nodes, event.node)) return run
      if (run.frameBytes + event.image.length > FRAME_OUTPUT_LIMIT) return { ...run, framesOverLimit: true }
      const image = { node: event.node, image_type: event.image_type, image: event.image }
      return { ...run, frames: [...run.frames, image], frameBytes: run.frameBytes + event.image.length }
    }
    case "Executed": {
      if (event.files === undefined) return { ...run, partial: true }
      const files: Record<string, ReadonlyArray<OutputFile>> = Object.assign(Object.create(null), run.files)
      // A node without files has none in the history either (its output may still be listed there, as text).
      if (event.files.length > 0) files[event.node] = event.files
      else delete files[event.node]
      const next = { ...run, files }
      return event.files.length > 0 && !(nodes?.saving.has(event.node) ?? false) ? dropFrames(next, event.node) : next
    }
    case "ExecutionSuccess":
      return { ...run, end: { outcome: "success", completed_at: event.timestamp, error: null } }
    case "ExecutionError":
      return {
        ...run,
        end: {
          outcome: "error",
          completed_at: event.timestamp ?? null,
          error: { node_id: event.node_id, exception_type: event.exception_type, exception_message: event.exception_message }
        }
      }
    case "ExecutionInterrupted":
      return { ...run, end: { outcome: "interrupted", completed_at: event.timestamp ?? null, error: null } }
    default:
      return run
  }
}

/** Whether the run was seen whole, up to its terminal message. */
export const seenWhole = (run: SeenRun | undefined): run is SeenRun & { readonly end: NonNullable<SeenRun["end"]> } =>
  run !== undefined && !run.partial && run.end !== undefined

/** The prompt's history as the run showed it, when it was seen whole. */
export const seenHistory = (run: SeenRun | undefined): SeenHistory | undefined =>
  !seenWhole(run) ? undefined : {
    ...run.end,
    started_at: run.started_at,
    outputs: Object.values(run.files).flat(),
    frames: { images: run.frames, overLimit: run.framesOverLimit }
  }

/** The images a run sent as frames, when it was seen whole (else some may be missing). */
export const seenFrames = (run: SeenRun | undefined): SeenFrames | undefined =>
  seenWhole(run) ? { images: run.frames, overLimit: run.framesOverLimit } : undefined
