/**
 * The outputs of a successful run, brought into the blob store before its completion is written:
 * the files its history lists, copied from the runner's `/view`, then the images its nodes sent
 * as WebSocket frames (FrameOutputs.ts), stored from the bytes the driver kept. A run whose frame
 * images were not all received (the socket did not show it whole) or were too many fails instead
 * of completing without them.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type { RunnerTarget } from "../domain/Runner.js"
import { type OutputFile, type PromptHistory, RunnerGateway } from "../ports/RunnerGateway.js"
import { type BlobContent, BlobStore, isBlobBytes, outputBlobKey } from "../ports/BlobStore.js"
import { StorageError } from "../domain/Errors.js"
import { IdGenerator, type OutputId, type WorkflowId } from "../domain/Ids.js"
import { retryAfterFailure } from "../domain/RetryAfterFailure.js"
import type { WorkflowOutput } from "../domain/Workflow.js"
import { WorkflowTransition } from "../domain/WorkflowStatus.js"
import { Driving } from "./Driving.js"
import { FRAME_OUTPUT_LIMIT, type FrameImage, frameFilename, SAVE_IMAGE_WEBSOCKET } from "./FrameOutputs.js"
import type { Tracked } from "./InFlight.js"
import { type SeenHistory, seenFrames, seenWhole } from "./SeenRun.js"

/** An output's copy is tried three times: again after 200 ms, then after 400 ms. */
const copyRetries = Schedule.exponential("200 millis").pipe(Schedule.upTo({ times: 2 }))

type Described = Pick<WorkflowOutput, "node_id" | "filename" | "subfolder" | "type">

/** Stores one output under a new id, with `content` (retried as a whole). */
const storeOutput = <E, R>(
  workflowId: string,
  described: Described,
  content: Effect.Effect<{ readonly content_type: string; readonly content: BlobContent }, E, R>
) =>
  Effect.gen(function*() {
    const blobs = yield* BlobStore
    const id = (yield* (yield* IdGenerator).next) as OutputId
    const key = outputBlobKey(workflowId, id, described.filename)
    const { content: bytes, content_type } = yield* content
    const size = yield* blobs.put(key, bytes, content_type)
    return { id, workflow_id: workflowId as WorkflowId, ...described, content_type, size, blob_key: key, created_at: yield* DateTime.now } satisfies WorkflowOutput
  }).pipe((store) => retryAfterFailure(store, copyRetries))

/** Copies a finished prompt's output files from the runner into the blob store. */
export const copyOutputs = (workflowId: string, runner: RunnerTarget, files: ReadonlyArray<OutputFile>) =>
  Effect.flatMap(RunnerGateway, (gateway) =>
    Effect.forEach(files, (file) =>
      storeOutput(workflowId, file, Effect.map(gateway.download(runner, file), (download) => ({
        content_type: download.content_type,
        content: isBlobBytes(download.content)
          ? download.content
          : download.content.pipe(Stream.mapError((e) => new StorageError({ message: e.message })))
      }))), { concurrency: Math.min(4, files.length) }))

/** Stores the images a run sent as frames, each named after its node (`websocket_<node>_00001_.png`). */
export const storeFrames = (workflowId: string, images: ReadonlyArray<FrameImage>) => {
  const counts = new Map<string, number>()
  const named = images.map((f) => {
    const n = (counts.get(f.node) ?? 0) + 1
    counts.set(f.node, n)
    return { frame: f, described: { node_id: f.node, filename: frameFilename(f.node, n, f.image_type), subfolder: "", type: "websocket" } }
  })
  return Effect.forEach(named, ({ described, frame }) =>
    storeOutput(workflowId, described, Effect.succeed({ content_type: frame.image_type, content: [frame.image] })))
}

/**
 * The `SaveImageWebsocket` nodes of a tracked prompt: noted at its claim, or for an inherited one
 * (another instance posted it) from the prompt the runner's history shows.
 */
const savingNodes = (t: Tracked, history: PromptHistory): ReadonlyArray<string> =>
  t.frames !== undefined
    ? [...t.frames.saving]
    : Object.entries(history.classes ?? {}).filter(([, type]) => type === SAVE_IMAGE_WEBSOCKET).map(([id]) => id)

const lost = (exception_type: string, exception_message: string) =>
  WorkflowTransition.Failed({ error_node: null, exception_type, exception_message })

/** What became of a successful run's outputs. */
export type Kept =
  | { readonly _tag: "Kept"; readonly outputs: ReadonlyArray<WorkflowOutput> }
  /** Its outputs are lost: this failure replaces the completion. */
  | { readonly _tag: "Lost"; readonly end: WorkflowTransition }
  /** The socket is still following its run, images and all: the end is left to it. */
  | { readonly _tag: "Following" }
  /** The runner is no longer known here (a managed runner left the configuration). */
  | { readonly _tag: "NoRunner" }

/** Brings a successful run's outputs in: `history` from the socket (with its frames) or from `/history/{id}`. */
export const keepOutputs = (t: Tracked, history: SeenHistory) =>
  Effect.gen(function*() {
    const id = t.workflow.id
    // A history read from the runner lists no frame: the run as the socket showed it has them, if whole.
    const frames = history.frames ?? seenFrames(t.run)
    if (frames === undefined) {
      // The history was read while the socket has not yet delivered the end of a run it follows
      // (reconciliation came first): the socket's end comes next, with every image.
      const following = t.run !== undefined && !seenWhole(t.run) && ((t.frames?.saving.size ?? 0) > 0 || t.run.frames.length > 0)
      if (following) return { _tag: "Following" } satisfies Kept
      const saving = savingNodes(t, history)
      if (saving.length > 0) {
        return {
          _tag: "Lost",
          end: lost(
            "OutputUnavailable",
            `The run succeeded but WES did not receive every image its SaveImageWebsocket node (${saving.join(", ")}) sent: ` +
              "the runner's WebSocket was interrupted during the run (or the run was started by another WES instance)"
          )
        } satisfies Kept
      }
    } else if (frames.overLimit) {
      return {
        _tag: "Lost",
        end: lost("OutputTooLarge", `The run sent more than ${FRAME_OUTPUT_LIMIT / 1024 / 1024} MiB of images over the WebSocket, the most WES keeps for one workflow`)
      } satisfies Kept
    }
    const images = frames?.images ?? []
    let target: Option.Option<RunnerTarget> = Option.none()
    if (history.outputs.length > 0) {
      // The runner is read only to copy from it: an end without files is written without a store read (B6).
      target = yield* (yield* Driving).target
      if (Option.isNone(target)) return { _tag: "NoRunner" } satisfies Kept
    }
    const files = Option.isSome(target) ? copyOutputs(id, target.value, history.outputs) : Effect.succeed([])
    const stored = yield* Effect.result(
      images.length === 0 ? files : Effect.zipWith(files, storeFrames(id, images), (copied, sent) => [...copied, ...sent])
    )
    if (Result.isSuccess(stored)) return { _tag: "Kept", outputs: stored.success } satisfies Kept
    return {
      _tag: "Lost",
      end: lost("OutputUnavailable", `The run succeeded but its output files could not be copied from the runner: ${stored.failure.message}`)
    } satisfies Kept
  })
