/**
 * ComfyUI's HTTP API as typed operations (comfyui-protocol.md sections 2-7): probe, node
 * replacements, upload, submit, queue, history, status, cancel and download. Every call carries
 * the runner's headers, has one timeout (undici's) and fails with core's runner errors. Status and
 * cancel go through the jobs API on a runner whose probe found it (`ComfyJobs.ts`).
 */
import { Readable } from "node:stream"
import {
  type Download,
  type NodeReplacements,
  type ObjectInfo,
  type OutputFile,
  type PromptHistory,
  PromptRejected,
  type PromptStatus,
  PromptWithheld,
  type QueueSnapshot,
  type RunnerError,
  type RunnerInfo,
  type RunnerTarget,
  type RunnerUnreachable,
  type StorageError,
  type SubmitPrompt,
  type Submitted,
  UPLOAD_SUBFOLDER,
  type UploadedInput
} from "@wes/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { Dispatcher } from "undici"
import {
  hasNodeErrors,
  HistoryAnswer,
  NodeReplacementsAnswer,
  ObjectInfoAnswer,
  HistoryEntry,
  partialRejection,
  PromptAccepted,
  PromptRefused,
  QueueAnswer,
  rejection,
  SystemStats,
  toPromptHistory,
  toNodeReplacements,
  toQueueSnapshot,
  toRunnerInfo,
  toUploadedInput,
  UploadAnswer
} from "./ComfyResponses.js"
import { makeComfyJobs } from "./ComfyJobs.js"
import { outputContentType } from "./ContentTypes.js"
import { multipartUpload } from "./MultipartUpload.js"
import {
  type Answer,
  BodyTooLarge,
  describeCause,
  isTimeout,
  type Limits,
  open,
  readBounded,
  readJson,
  send,
  sendOk,
  statusFailure,
  unexpectedBody,
  unreachable
} from "./RunnerHttp.js"

/** Timeouts and upload settings of the HTTP client. */
export interface ComfyClientOptions {
  /**
   * Limit of ordinary calls (default 30 s): for connecting, for the answer's headers, and between
   * bytes of its body.
   */
  readonly requestTimeout?: Duration.Input
  /** Limit of an upload, body included (default 10 minutes). */
  readonly uploadTimeout?: Duration.Input
  /** A download fails when no bytes arrive for this long (default 60 s); its headers obey `requestTimeout`. */
  readonly downloadIdleTimeout?: Duration.Input
  /**
   * A download whose answer announces (`Content-Length`) at most this many bytes is read whole
   * before it is handed over, and goes to the blob store as bytes (default 256 KiB); a larger or
   * unannounced one streams. At most this much per output file in flight is held in memory.
   */
  readonly downloadHeldWhole?: number
  /** Limit of a `GET /object_info`, the whole exchange (default 30 s): it can be several MB. */
  readonly objectInfoTimeout?: Duration.Input
  /** Largest `/object_info` answer read, in bytes (default 64 MiB; a bare ComfyUI 0.3.64 sends 0.5 MB). */
  readonly objectInfoMaxBytes?: number
  /** Sub folder of the runner's input directory for uploads (default `wes`). */
  readonly uploadSubfolder?: string
  /**
   * Send `overwrite=true` (default false). Without it ComfyUI keeps same-content files under
   * their name and renames different content (`name (1).png`); the returned name is always right.
   */
  readonly uploadOverwrite?: boolean
}

/** The runner's HTTP operations; what `RunnerGateway` exposes minus the WebSocket. */
export interface ComfyClient {
  readonly probe: (runner: RunnerTarget) => Effect.Effect<RunnerInfo, RunnerError>
  readonly nodeReplacements: (runner: RunnerTarget) => Effect.Effect<Option.Option<NodeReplacements>, RunnerError>
  readonly objectInfo: (runner: RunnerTarget) => Effect.Effect<ObjectInfo, RunnerError>
  readonly uploadInput: (
    runner: RunnerTarget,
    file: { readonly filename: string; readonly content_type: string; readonly content: Stream.Stream<Uint8Array, StorageError> }
  ) => Effect.Effect<UploadedInput, RunnerError | StorageError>
  readonly submit: (runner: RunnerTarget, prompt: SubmitPrompt) => Effect.Effect<Submitted, RunnerError | PromptRejected | PromptWithheld>
  readonly queue: (runner: RunnerTarget) => Effect.Effect<QueueSnapshot, RunnerError>
  readonly history: (runner: RunnerTarget, promptId: string) => Effect.Effect<Option.Option<PromptHistory>, RunnerError>
  readonly status: (runner: RunnerTarget, promptId: string) => Effect.Effect<PromptStatus, RunnerError>
  readonly cancel: (runner: RunnerTarget, promptId: string) => Effect.Effect<void, RunnerError>
  readonly download: (runner: RunnerTarget, file: OutputFile) => Effect.Effect<Download, RunnerError>
}

/** Decodes a JSON answer with `schema`; a mismatch means the endpoint is not a working ComfyUI. */
const decodeAnswer = <A>(schema: Schema.Decoder<A>) => {
  const decode = Schema.decodeUnknownExit(schema)
  return (runner: RunnerTarget, answer: Answer): Effect.Effect<A, RunnerUnreachable> =>
    Effect.flatMap(readJson(runner, answer), (body) =>
      Effect.mapError(decode(body), () => unexpectedBody(runner, answer.what, answer.status, JSON.stringify(body))))
}

const queueAnswer = decodeAnswer(QueueAnswer)
const historyAnswer = decodeAnswer(HistoryAnswer)
const systemStats = decodeAnswer(SystemStats)
const promptAccepted = decodeAnswer(PromptAccepted)
const uploadAnswer = decodeAnswer(UploadAnswer)
const objectInfoAnswer = decodeAnswer(ObjectInfoAnswer)
const nodeReplacementsAnswer = decodeAnswer(NodeReplacementsAnswer)
const decodeRefused = Schema.decodeUnknownExit(PromptRefused)
const decodeHistoryEntry = Schema.decodeUnknownExit(HistoryEntry)

/** Strips path components so a user's file name cannot pick a directory on the runner. */
const safeFilename = (name: string): string => {
  const base = name.split(/[\\/]/).pop()?.replace(/[\r\n"]/g, "_").trim() ?? ""
  return base === "" || base === "." || base === ".." ? "input" : base
}

/** Builds the HTTP operations on `dispatcher` (a keep-alive undici `Agent`, see `RunnerGatewayNode`). */
export const makeComfyClient = (dispatcher: Dispatcher, options: ComfyClientOptions = {}): ComfyClient => {
  const requestTimeout = options.requestTimeout ?? Duration.seconds(30)
  const uploadTimeout = options.uploadTimeout ?? Duration.minutes(10)
  const idleTimeout = options.downloadIdleTimeout ?? Duration.seconds(60)
  const subfolder = options.uploadSubfolder ?? UPLOAD_SUBFOLDER
  const overwrite = options.uploadOverwrite ?? false
  const ordinary: Limits = { headers: requestTimeout, body: requestTimeout, named: requestTimeout }
  // The whole upload is bounded; undici's own timers cannot fire first.
  const upload: Limits = { headers: uploadTimeout, body: uploadTimeout, whole: uploadTimeout, named: uploadTimeout }
  const download: Limits = { headers: requestTimeout, body: idleTimeout, named: requestTimeout }
  const objectInfoTimeout = options.objectInfoTimeout ?? Duration.seconds(30)
  const objectInfoLimits: Limits = { headers: objectInfoTimeout, body: objectInfoTimeout, whole: objectInfoTimeout, named: objectInfoTimeout }
  const objectInfoMaxBytes = options.objectInfoMaxBytes ?? 64 * 1024 * 1024
  const stalled = `download stalled for ${Duration.format(Duration.fromInputUnsafe(idleTimeout))}`
  const heldWhole = options.downloadHeldWhole ?? 256 * 1024

  const getJson = <A>(runner: RunnerTarget, path: string, decode: (runner: RunnerTarget, answer: Answer) => Effect.Effect<A, RunnerUnreachable>) =>
    Effect.flatMap(sendOk(dispatcher, runner, { method: "GET", path, acceptJson: true }, ordinary), (answer) => decode(runner, answer))

  // The answer is an empty 200, read (and dropped) by `send`.
  const postEmpty = (runner: RunnerTarget, path: string, json: unknown) =>
    Effect.asVoid(sendOk(dispatcher, runner, { method: "POST", path, json }, ordinary))

  /**
   * Deletes the prompt from the queue, then interrupts it only if the queue shows it running:
   * before 0.3.57 `/interrupt` ignores its `prompt_id` and stops whatever runs, so cancelling a
   * pending prompt must not send one. (A prompt that starts between the two is then running, and
   * interrupted; from 0.3.57 the `prompt_id` makes the interrupt exact.)
   */
  const legacyCancel = (runner: RunnerTarget, promptId: string): Effect.Effect<void, RunnerError> =>
    postEmpty(runner, "/queue", { delete: [promptId] }).pipe(
      Effect.andThen(getJson(runner, "/queue", queueAnswer)),
      Effect.flatMap((q) =>
        toQueueSnapshot(q).running.includes(promptId) ? postEmpty(runner, "/interrupt", { prompt_id: promptId }) : Effect.void)
    )

  const jobs = makeComfyJobs(dispatcher, ordinary)
  /** Through the jobs API where the runner has it (and still answers it), else `legacy`. */
  const viaJobs = <A>(runner: RunnerTarget, jobsCall: Effect.Effect<Option.Option<A>, RunnerError>, legacy: Effect.Effect<A, RunnerError>) =>
    runner.comfyui?.jobs_api === true
      ? Effect.flatMap(jobsCall, Option.match({ onNone: () => legacy, onSome: Effect.succeed }))
      : legacy

  const cancel = (runner: RunnerTarget, promptId: string): Effect.Effect<void, RunnerError> =>
    viaJobs(runner, jobs.cancel(runner, promptId), legacyCancel(runner, promptId))

  const history = (runner: RunnerTarget, promptId: string) =>
    Effect.flatMap(getJson(runner, `/history/${encodeURIComponent(promptId)}`, historyAnswer), (answer) => {
      if (!Object.hasOwn(answer, promptId)) return Effect.succeed(Option.none())
      return decodeHistoryEntry(answer[promptId]).pipe(
        Effect.mapError(() => unexpectedBody(runner, `GET /history/${promptId}`, 200, JSON.stringify(answer[promptId]))),
        Effect.map((entry) => Option.some(toPromptHistory(entry)))
      )
    })

  /** The queue first: a prompt that leaves it in between is then in the history. */
  const legacyStatus = (runner: RunnerTarget, promptId: string): Effect.Effect<PromptStatus, RunnerError> =>
    Effect.flatMap(getJson(runner, "/queue", queueAnswer), (q) => {
      const snapshot = toQueueSnapshot(q)
      if (snapshot.running.includes(promptId)) return Effect.succeed({ _tag: "Running" as const })
      const at = snapshot.pending.indexOf(promptId)
      if (at >= 0) return Effect.succeed({ _tag: "Pending" as const, position: at + 1 })
      return Effect.map(history(runner, promptId), Option.match({
        onNone: (): PromptStatus => ({ _tag: "Unknown" }),
        onSome: (h): PromptStatus => ({ _tag: "Finished", history: h })
      }))
    })

  const submit = (runner: RunnerTarget, p: SubmitPrompt): Effect.Effect<Submitted, RunnerError | PromptRejected | PromptWithheld> => {
    const json = {
      prompt: p.prompt,
      prompt_id: p.prompt_id,
      client_id: p.client_id,
      extra_data: { ...p.extra_data, wes_workflow_id: p.extra_data.wes_workflow_id ?? p.prompt_id }
    }
    const rejected = (r: { error_type: string; message: string; error_node: string | null }) =>
      new PromptRejected({ runner_id: runner.id, ...r })
    const accepted = (answer: Answer): Effect.Effect<Submitted, RunnerError | PromptRejected> =>
      Effect.flatMap(promptAccepted(runner, answer), (ok) => {
        if (ok.prompt_id !== p.prompt_id) {
          // Servers before 0.3.45 mint their own id: WES could not follow the prompt. Take it back.
          return cancel(runner, ok.prompt_id).pipe(
            Effect.catch((e) => Effect.logWarning(`could not withdraw prompt ${ok.prompt_id}: ${e.message}`)),
            Effect.andThen(Effect.fail(rejected({
              error_type: "unsupported_runner",
              message: `The runner ignored the prompt id WES sent (it answered ${ok.prompt_id}): WES needs ComfyUI 0.3.45 or later`,
              error_node: null
            })))
          )
        }
        if (!hasNodeErrors(ok.node_errors)) return Effect.succeed({ prompt_id: ok.prompt_id, number: ok.number })
        // Some outputs were dropped: the prompt is invalid. Take it back before saying so.
        return cancel(runner, ok.prompt_id).pipe(
          Effect.catch((e) => Effect.logWarning(`could not withdraw partially invalid prompt ${ok.prompt_id}: ${e.message}`)),
          Effect.andThen(Effect.fail(rejected(partialRejection(ok.node_errors))))
        )
      })
    // A 400 is ComfyUI's refusal when it has the refusal's shape; anything else is a plain status failure.
    const refused = (answer: Answer): Effect.Effect<never, RunnerError | PromptRejected> =>
      readJson(runner, answer).pipe(
        Effect.flatMap((body) => decodeRefused(body)),
        Effect.matchEffect({
          onFailure: () => Effect.fail(statusFailure(runner, answer)),
          onSuccess: (r) => Effect.fail(rejected(rejection(r)))
        })
      )
    // Whether the fence withheld the post (asked by undici, outside any fiber).
    let withheld = false
    const asked = p.fence
    const fence = asked === undefined ? undefined : () => asked() || ((withheld = true), false)
    return send(dispatcher, runner, { method: "POST", path: "/prompt", acceptJson: true, json, fence }, ordinary).pipe(
      Effect.catch((e) =>
        Effect.fail(withheld ? new PromptWithheld({ runner_id: runner.id, message: "POST /prompt: not sent: this instance no longer drives the runner" }) : e)
      ),
      Effect.flatMap((answer) =>
        answer.status === 200 ? accepted(answer) : answer.status === 400 ? refused(answer) : Effect.fail(statusFailure(runner, answer))
      )
    )
  }

  const uploadInput: ComfyClient["uploadInput"] = (runner, file) =>
    Effect.gen(function*() {
      const storageFailure = yield* Ref.make(Option.none<StorageError>())
      const content = file.content.pipe(Stream.tapError((e) => Ref.set(storageFailure, Option.some(e))))
      const { body, contentType } = yield* multipartUpload({
        fields: { type: "input", subfolder, overwrite: overwrite ? "true" : "false" },
        file: { field: "image", filename: safeFilename(file.filename), contentType: file.content_type, content }
      })
      // Pulled chunk by chunk as undici writes, one chunk ahead (`Readable.from` reads 16 ahead: 16 MiB
      // of a blob's 1 MiB chunks held); aborting the request destroys it, which stops the stream.
      const stream = Readable.from(yield* Stream.toAsyncIterableEffect(body), { highWaterMark: 1 })
      return yield* sendOk(dispatcher, runner, { method: "POST", path: "/upload/image", acceptJson: true, stream: { body: stream, contentType } }, upload).pipe(
        Effect.flatMap((answer) => Effect.map(uploadAnswer(runner, answer), toUploadedInput)),
        // A failing content stream surfaces as a transport error of the request: report the real cause.
        Effect.catch((e): Effect.Effect<never, RunnerError | StorageError> =>
          Effect.flatMap(Ref.get(storageFailure), (storage): Effect.Effect<never, RunnerError | StorageError> =>
            Option.isSome(storage) ? Effect.fail(storage.value) : Effect.fail(e))
        )
      )
    })

  return {
    probe: (runner) =>
      Effect.map(
        Effect.all([getJson(runner, "/system_stats", systemStats), jobs.detect(runner)], { concurrency: 2 }),
        ([stats, jobsApi]) => toRunnerInfo(stats, jobsApi)
      ),
    nodeReplacements: (runner) =>
      Effect.flatMap(send(dispatcher, runner, { method: "GET", path: "/node_replacements", acceptJson: true }, ordinary), (answer) =>
        answer.status === 200
          ? Effect.map(nodeReplacementsAnswer(runner, answer), (r) => Option.some(toNodeReplacements(r)))
          // Before newer ComfyUI the route is missing: the static files' 404.
          : answer.status === 404 ? Effect.succeedNone : Effect.fail(statusFailure(runner, answer))),
    objectInfo: (runner) =>
      Effect.flatMap(
        sendOk(dispatcher, runner, { method: "GET", path: "/object_info", acceptJson: true, maxBytes: objectInfoMaxBytes }, objectInfoLimits),
        (answer) => objectInfoAnswer(runner, answer)
      ),
    uploadInput,
    submit,
    queue: (runner) => Effect.map(getJson(runner, "/queue", queueAnswer), toQueueSnapshot),
    history,
    status: (runner, promptId) => viaJobs(runner, jobs.status(runner, promptId), legacyStatus(runner, promptId)),
    cancel,
    download: (runner, file) =>
      Effect.flatMap(
        open(dispatcher, runner, { method: "GET", path: "/view", query: { filename: file.filename, subfolder: file.subfolder, type: file.type } }, download),
        ({ body, headers, what }): Effect.Effect<Download, RunnerUnreachable> => {
          const content_type = outputContentType(file.filename, headers["content-type"])
          // undici's `bodyTimeout` is the idle timeout: it runs only while the runner owes bytes, not while the consumer is slow.
          const broke = (e: unknown) =>
            unreachable(runner, `${what}: ${isTimeout(e) ? stalled : e instanceof BodyTooLarge ? "more bytes than announced" : `download broke off: ${describeCause(e)}`}`)
          const announced = Number(headers["content-length"])
          if (Number.isSafeInteger(announced) && announced <= heldWhole) {
            return Effect.map(
              Effect.tryPromise({ try: (signal) => readBounded(body, announced, signal), catch: broke }),
              (bytes) => ({ content_type, content: bytes })
            )
          }
          return Effect.succeed({ content_type, content: Stream.fromAsyncIterable(body, broke) })
        }
      )
  }
}
