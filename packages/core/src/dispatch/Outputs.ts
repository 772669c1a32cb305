/**
 * The outputs of a successful run, brought into the blob store before its completion is written:
 * the files its history lists, copied from the runner's `/view`, then the images its nodes sent
 * as WebSocket frames (FrameOutputs.ts), stored from the bytes the driver kept. A run whose frame
 * images were not all received (the socket did not show it whole) or were too many fails instead
 * of completing without them. A file over the owner's tier's `max_output_bytes` fails the run
 * (OutputLimit.ts); a run whose outputs are not all kept lists none, and what was stored of them
 * is deleted.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
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
import { limitContent, outputLimits, OutputTooLarge } from "./OutputLimit.js"
import { FRAME_OUTPUT_LIMIT, type FrameImage, frameFilename, SAVE_IMAGE_WEBSOCKET } from "./FrameOutputs.js"
import type { Tracked } from "./InFlight.js"
import { type SeenHistory, seenFrames, seenWhole } from "./SeenRun.js"

/** An output's copy is tried three times: again after 200 ms, then after 400 ms. */
const copyRetries = Schedule.exponential("200 millis").pipe(Schedule.upTo({ times: 2 }))

type Described = Pick<WorkflowOutput, "node_id" | "filename" | "subfolder" | "type">

/** What an output is written from; `overflown`, why a write failed when the file outgrew its limit. */
interface OutputContent {
  readonly content_type: string
  readonly content: BlobContent
  readonly overflown?: () => Option.Option<OutputTooLarge>
}

/**
 * Stores one output under a new id, with `content` (retried as a whole, unless over its limit);
 * `stored` collects its key once it is written.
 */
const storeOutput = <E, R>(
  workflowId: string,
  described: Described,
  content: Effect.Effect<OutputContent, E, R>,
  stored: Ref.Ref<ReadonlyArray<string>>
) =>
  Effect.gen(function*() {
    const blobs = yield* BlobStore
    const id = (yield* (yield* IdGenerator).next) as OutputId
    const key = outputBlobKey(workflowId, id, described.filename)
    const { content: bytes, content_type, overflown } = yield* content
    const size = yield* blobs.put(key, bytes, content_type).pipe(
      Effect.mapError((e): StorageError | OutputTooLarge => Option.getOrElse(overflown?.() ?? Option.none(), () => e))
    )
    yield* Ref.update(stored, (keys) => [...keys, key])
    return { id, workflow_id: workflowId as WorkflowId, ...described, content_type, size, blob_key: key, created_at: yield* DateTime.now, expired_at: null } satisfies WorkflowOutput
  }).pipe((store) => retryAfterFailure(store, copyRetries, (e) => !(e instanceof OutputTooLarge)))

/** Copies a finished prompt's output files from the runner into the blob store, each within the owner's tier's `max_output_bytes`. */
export const copyOutputs = (
  workflow: { readonly id: string; readonly user_id: string },
  runner: RunnerTarget,
  files: ReadonlyArray<OutputFile>,
  stored: Ref.Ref<ReadonlyArray<string>>
) =>
  Effect.gen(function*() {
    const gateway = yield* RunnerGateway
    const limits = yield* outputLimits(workflow.user_id)
    const download = (file: OutputFile) =>
      Effect.flatMap(gateway.download(runner, file), (d) =>
        Effect.map(
          limitContent(limits, file, isBlobBytes(d.content) ? d.content : d.content.pipe(Stream.mapError((e) => new StorageError({ message: e.message })))),
          (limited): OutputContent => ({ content_type: d.content_type, ...limited })
        ))
    return yield* Effect.forEach(files, (file) => storeOutput(workflow.id, file, download(file), stored), { concurrency: Math.min(4, files.length) })
  })

/** Stores the images a run sent as frames, each named after its node (`websocket_<node>_00001_.png`). */
export const storeFrames = (workflowId: string, images: ReadonlyArray<FrameImage>, stored: Ref.Ref<ReadonlyArray<string>>) => {
  const counts = new Map<string, number>()
  const named = images.map((f) => {
    const n = (counts.get(f.node) ?? 0) + 1
    counts.set(f.node, n)
    return { frame: f, described: { node_id: f.node, filename: frameFilename(f.node, n, f.image_type), subfolder: "", type: "websocket" } }
  })
  return Effect.forEach(named, ({ described, frame }) =>
    storeOutput(workflowId, described, Effect.succeed({ content_type: frame.image_type, content: [frame.image] }), stored))
}

/**
 * The `SaveImageWebsocket` nodes of a tracked prompt: noted at its claim, or for an inherited one
 * (another instance posted it) from the prompt the runner's history shows.
 */
const savingNodes = (t: Tracked, history: PromptHistory): ReadonlyArray<string> =>
  t.frames !== undefined
    ? [...t.frames.saving]
    : Object.entries(history.classes ?? {}).filter(([, type]) => type === SAVE_IMAGE_WEBSOCKET).map(([id]) => id)

/** Deletes the blobs of outputs that will not be listed (a failure to delete is logged: the retention sweeper takes what is left). */
const discard = (keys: ReadonlyArray<string>) =>
  Effect.flatMap(BlobStore, (blobs) =>
    Effect.forEach(keys, (key) =>
      Effect.catch(blobs.delete(key), (e) => Effect.logWarning("WES: could not delete an output that is not kept", { key, error: e.message })), { discard: true }))

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
    const keys = yield* Ref.make<ReadonlyArray<string>>([])
    const files = Option.isSome(target) ? copyOutputs(t.workflow, target.value, history.outputs, keys) : Effect.succeed([])
    const stored = yield* Effect.result(
      images.length === 0 ? files : Effect.zipWith(files, storeFrames(id, images, keys), (copied, sent) => [...copied, ...sent])
    )
    if (Result.isSuccess(stored)) return { _tag: "Kept", outputs: stored.success } satisfies Kept
    // None is listed: what was stored of them goes too.
    yield* discard(yield* Ref.get(keys))
    const failure = stored.failure
    return {
      _tag: "Lost",
      end: failure instanceof OutputTooLarge
        ? lost("OutputTooLarge", `The run succeeded but an output is over its limit: ${failure.message}`)
        : lost("OutputUnavailable", `The run succeeded but its output files could not be copied from the runner: ${failure.message}`)
    } satisfies Kept
  })
