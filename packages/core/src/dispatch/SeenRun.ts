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
 * history as before (Track.ts clears what it saw at every (re)connection).
 */
import type { OutputFile, PromptHistory, RunnerEvent } from "../runners/RunnerGateway.js"

export interface SeenRun {
  /** The runner's timestamp of `execution_start` (Unix ms). */
  readonly started_at: number | null
  /** The files of each node's last `executed` message, by node id (a null-prototype object: key order as the history's). */
  readonly files: Readonly<Record<string, ReadonlyArray<OutputFile>>>
  /** An `executed` message without its files was seen: the history must be read. */
  readonly partial: boolean
  /** The terminal message, once seen. */
  readonly end?: Pick<PromptHistory, "outcome" | "completed_at" | "error"> | undefined
}

/** A run whose `execution_start` (with its timestamp) was just seen. */
export const startRun = (startedAt: number | null): SeenRun => ({ started_at: startedAt, files: Object.create(null), partial: false })

/** The run after one more event of its prompt (events of other kinds change nothing). */
export const seeRun = (run: SeenRun, event: RunnerEvent): SeenRun => {
  switch (event._tag) {
    case "Executed": {
      if (event.files === undefined) return { ...run, partial: true }
      const files: Record<string, ReadonlyArray<OutputFile>> = Object.assign(Object.create(null), run.files)
      // A node without files has none in the history either (its output may still be listed there, as text).
      if (event.files.length > 0) files[event.node] = event.files
      else delete files[event.node]
      return { ...run, files }
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

/** The prompt's history as the run showed it, when it was seen whole. */
export const seenHistory = (run: SeenRun | undefined): PromptHistory | undefined =>
  run === undefined || run.partial || run.end === undefined
    ? undefined
    : { ...run.end, started_at: run.started_at, outputs: Object.values(run.files).flat() }
