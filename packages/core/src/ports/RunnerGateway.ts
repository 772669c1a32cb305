/**
 * What the service needs from a runner (a ComfyUI server): the operations of
 * comfyui-protocol.md that design.md uses, with typed failures. `@wes/runner-client` implements
 * it over HTTP + WebSocket.
 */
import type { NodeReplacements } from "../domain/Summary.js"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { StorageError } from "../domain/Errors.js"
import type { JsonObject } from "../domain/Json.js"
import type { RunnerComfyUI } from "../domain/ComfyUIVersion.js"
import type { RunnerTarget } from "../domain/Runner.js"

/** The runner could not be reached, timed out, or answered 5xx: worth retrying. */
export class RunnerUnreachable extends Schema.TaggedError<RunnerUnreachable>()("RunnerUnreachable", {
  runner_id: Schema.String,
  message: Schema.String
}) {}

/** The runner answered a request with a client error (4xx) other than a prompt rejection. */
export class RunnerRequestFailed extends Schema.TaggedError<RunnerRequestFailed>()("RunnerRequestFailed", {
  runner_id: Schema.String,
  status: Schema.Int,
  message: Schema.String
}) {}

/**
 * The runner refused the prompt (400 with an `error`, or 200 with non-empty `node_errors`):
 * the workflow is `invalid`, with the runner's reason kept.
 */
export class PromptRejected extends Schema.TaggedError<PromptRejected>()("PromptRejected", {
  runner_id: Schema.String,
  error_type: Schema.String,
  message: Schema.String,
  error_node: Schema.NullOr(Schema.String)
}) {}

/**
 * A post the runner never received: its `fence` said, as the request was about to be written,
 * that this instance may no longer drive the runner (another instance may have posted it since).
 */
export class PromptWithheld extends Schema.TaggedError<PromptWithheld>()("PromptWithheld", {
  runner_id: Schema.String,
  message: Schema.String
}) {}

export type RunnerError = RunnerUnreachable | RunnerRequestFailed

/** `/system_stats` reduced to what the service uses, and whether the runner has the jobs API. */
export type RunnerInfo = RunnerComfyUI


/** `/object_info` as ComfyUI sends it: node class name -> its definition (inputs, outputs, ...). */
export type ObjectInfo = { readonly [nodeClass: string]: unknown }

/** Where an uploaded input file landed on the runner. */
export type { NodeReplacements }

export interface UploadedInput {
  readonly name: string
  readonly subfolder: string
  readonly type: string
}

/** The subfolder of ComfyUI's input folder WES uploads inputs to (one name, so a run's files can be found again to delete). */
export const UPLOAD_SUBFOLDER = "wes"

/** The value a node input takes to load an uploaded file (comfyui-protocol.md section 9). */
export const inputReference = (u: UploadedInput): string => {
  const path = u.subfolder === "" ? u.name : `${u.subfolder}/${u.name}`
  return u.type === "input" ? path : `${path} [${u.type}]`
}

export interface SubmitPrompt {
  /** The workflow id (a lowercase UUID) so a restarted dispatcher can find it. */
  readonly prompt_id: string
  readonly prompt: JsonObject
  /** The WebSocket client id that should receive this prompt's events. */
  readonly client_id: string
  readonly extra_data: JsonObject
  /**
   * Asked synchronously right before the request's bytes are written (after any wait for a
   * connection): false withholds the post, nothing reaches the runner, and `submit` fails with
   * `PromptWithheld`. A check before calling `submit` cannot stand in for it: the request may wait
   * long after it (a frozen or overloaded process), past the lease it was checked against.
   */
  readonly fence?: () => boolean
}

export interface Submitted {
  readonly prompt_id: string
  /** The runner's priority number (not a position). */
  readonly number: number
}

/** `/queue`: running ids and pending prompts in execution order. */
export interface QueueSnapshot {
  readonly running: ReadonlyArray<string>
  readonly pending: ReadonlyArray<string>
}

/** Where a prompt is on a runner: waiting (with its position when known), running, finished, or unknown there. */
export type PromptStatus =
  | { readonly _tag: "Pending"; readonly position: number | null }
  | { readonly _tag: "Running" }
  | { readonly _tag: "Finished"; readonly history: PromptHistory }
  | { readonly _tag: "Unknown" }

/** A file listed in a prompt's history outputs. */
export interface OutputFile {
  readonly node_id: string
  readonly filename: string
  readonly subfolder: string
  readonly type: string
}

/** A finished prompt as `/history/{id}` reports it. */
export interface PromptHistory {
  readonly outcome: "success" | "error" | "interrupted"
  readonly outputs: ReadonlyArray<OutputFile>
  /** Runner timestamps (Unix ms) of execution_start and of the terminal message, when present. */
  readonly started_at: number | null
  readonly completed_at: number | null
  readonly error: {
    readonly node_id: string | null
    readonly exception_type: string
    readonly exception_message: string
  } | null
  /** The class of each node of the prompt as the runner stored it (node id -> `class_type`), when the history shows it. */
  readonly classes?: Readonly<Record<string, string>> | undefined
}

/**
 * A downloaded output file: its bytes, read whole when the runner announced a small file (a
 * gateway's choice, bounded by it), or a stream of them. Bytes go to the blob store without a
 * stream's run, which was about half of a serial workflow's runtime steps (docs/decisions.md,
 * "Small outputs are read whole").
 */
export interface Download {
  readonly content_type: string
  readonly content: Stream.Stream<Uint8Array, RunnerError> | ReadonlyArray<Uint8Array>
}

/** One node of a `progress_state` message (ComfyUI 0.3.45 and later; pending nodes are never listed). */
export interface NodeProgressState {
  readonly node: string
  readonly state: "pending" | "running" | "finished" | "error"
  readonly value: number
  readonly max: number
}

/** An event of a runner's WebSocket, decoded (comfyui-protocol.md section 6). */
export type RunnerEvent =
  | { readonly _tag: "Connected" }
  | { readonly _tag: "Disconnected"; readonly reason: string }
  | { readonly _tag: "QueueChanged"; readonly queue_remaining: number }
  | { readonly _tag: "ExecutionStart"; readonly prompt_id: string; readonly timestamp: number | null }
  /** `execution_cached`: the prompt's nodes whose outputs are cached; they will not run. */
  | { readonly _tag: "ExecutionCached"; readonly prompt_id: string; readonly nodes: ReadonlyArray<string> }
  /** `progress_state`: every started node of the prompt with its state and step progress (cumulative). */
  | { readonly _tag: "ProgressState"; readonly prompt_id: string; readonly nodes: ReadonlyArray<NodeProgressState> }
  | { readonly _tag: "Executing"; readonly prompt_id: string | null; readonly node: string }
  | { readonly _tag: "Progress"; readonly prompt_id: string | null; readonly node: string | null; readonly value: number; readonly max: number }
  /**
   * `executed`: a node's output; `files`, the output files it lists (what the history lists under
   * the node). Without `files` the driver cannot take the prompt's end from the socket.
   */
  | {
    readonly _tag: "Executed"
    readonly prompt_id: string
    readonly node: string
    readonly output: unknown
    readonly files?: ReadonlyArray<OutputFile> | undefined
  }
  | { readonly _tag: "ExecutionSuccess"; readonly prompt_id: string; readonly timestamp: number | null }
  | {
    readonly _tag: "ExecutionError"
    readonly prompt_id: string
    readonly node_id: string | null
    readonly node_type: string | null
    readonly exception_type: string
    readonly exception_message: string
    /** The runner's timestamp of the message (Unix ms), when known. */
    readonly timestamp?: number | null | undefined
  }
  | { readonly _tag: "ExecutionInterrupted"; readonly prompt_id: string; readonly timestamp?: number | null | undefined }
  /**
   * A binary image frame: type 4 (ComfyUI 0.3.45 and later, after the client announced
   * `supports_preview_metadata`) names its prompt and node; a type 1 frame is attributed by the
   * gateway to the node the last `executing` message named (ComfyUI sends a node's frames between
   * its `executing` and the next). A sampler's preview, or the image of a node that saves through
   * the socket (`SaveImageWebsocket`): the driver tells them apart (FrameOutputs.ts).
   */
  | {
    readonly _tag: "ImageFrame"
    readonly prompt_id: string | null
    readonly node: string | null
    /** `image/png` or `image/jpeg`. */
    readonly image_type: string
    readonly image: Uint8Array
  }
  /** `executing {node: null}`: the prompt is done and its history has been written. */
  | { readonly _tag: "PromptDone"; readonly prompt_id: string }
  /**
   * A message of a kind the driver acts on that could not be decoded (so not attributed to a
   * prompt): what the socket showed of the runs in progress may be incomplete.
   */
  | { readonly _tag: "Unreadable"; readonly reason: string }

export class RunnerGateway extends Context.Service<RunnerGateway, {
  /**
   * `GET /system_stats`: is the runner there and answering, which ComfyUI and devices; and
   * whether it answers ComfyUI's jobs API (`GET /api/jobs`), which `cancel` and `status` then use
   * for this runner (`RunnerTarget.comfyui.jobs_api`).
   */
  readonly probe: (runner: RunnerTarget) => Effect.Effect<RunnerInfo, RunnerError>
  /** `GET /node_replacements`; none when the runner has no such route (before newer ComfyUI). */
  readonly nodeReplacements: (runner: RunnerTarget) => Effect.Effect<Option.Option<NodeReplacements>, RunnerError>
  /**
   * `GET /object_info`: the node classes the runner has loaded and their inputs (model loaders
   * list their files). Large (0.5 MB for a bare ComfyUI); the client bounds its size and time.
   */
  readonly objectInfo: (runner: RunnerTarget) => Effect.Effect<ObjectInfo, RunnerError>
  /** `POST /upload/image`: puts an input file on the runner. */
  readonly uploadInput: (
    runner: RunnerTarget,
    file: {
      readonly filename: string
      readonly content_type: string
      readonly content: Stream.Stream<Uint8Array, StorageError>
    }
  ) => Effect.Effect<UploadedInput, RunnerError | StorageError>
  /** `POST /prompt`. */
  readonly submit: (runner: RunnerTarget, prompt: SubmitPrompt) => Effect.Effect<Submitted, RunnerError | PromptRejected | PromptWithheld>
  /** `GET /queue`. */
  readonly queue: (runner: RunnerTarget) => Effect.Effect<QueueSnapshot, RunnerError>
  /** `GET /history/{prompt_id}`: none while pending, running or unknown. */
  readonly history: (runner: RunnerTarget, promptId: string) => Effect.Effect<Option.Option<PromptHistory>, RunnerError>
  /**
   * Where the prompt is: `GET /api/jobs/{id}` on a runner with the jobs API, else `GET /queue`
   * then `GET /history/{id}`.
   */
  readonly status: (runner: RunnerTarget, promptId: string) => Effect.Effect<PromptStatus, RunnerError>
  /**
   * Removes a pending prompt from the queue and interrupts it if running: one atomic
   * `POST /api/jobs/{id}/cancel` on a runner with the jobs API, else `POST /queue` (delete),
   * `GET /queue` and, if it runs, `POST /interrupt`.
   */
  readonly cancel: (runner: RunnerTarget, promptId: string) => Effect.Effect<void, RunnerError>
  /** `GET /view`: an output file. */
  readonly download: (runner: RunnerTarget, file: OutputFile) => Effect.Effect<Download, RunnerError>
  /**
   * The runner's WebSocket events, in order, for the life of the scope: it reconnects with backoff
   * until the scope closes; `Connected` after every (re)connect, so the consumer can reconcile.
   * A bounded queue the consumer takes from (what the socket delivered while the consumer was
   * busy comes as one batch), not a `Stream`: a stream's pull costs about 50 steps of Effect's
   * runtime per batch, paid for every progress message of every running prompt
   * (docs/decisions.md, "Runner events as a queue").
   */
  readonly events: (runner: RunnerTarget, clientId: string) => Effect.Effect<Queue.Dequeue<RunnerEvent>, never, Scope.Scope>
}>()("@wes/core/RunnerGateway") {}
