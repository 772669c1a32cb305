/**
 * ComfyUI's HTTP API as typed operations (comfyui-protocol.md sections 2-7): probe, upload,
 * submit, queue, history, cancel and download. Every call carries the runner's headers, has a
 * timeout and fails with core's runner errors.
 */
import type * as HttpClient from "@effect/platform/HttpClient"
import * as HttpClientRequest from "@effect/platform/HttpClientRequest"
import type * as HttpClientResponse from "@effect/platform/HttpClientResponse"
import {
  type Download,
  type OutputFile,
  type PromptHistory,
  PromptRejected,
  type QueueSnapshot,
  type RunnerError,
  type RunnerInfo,
  type RunnerTarget,
  type StorageError,
  type SubmitPrompt,
  type Submitted,
  type UploadedInput
} from "@wes/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import {
  hasNodeErrors,
  HistoryAnswer,
  HistoryEntry,
  partialRejection,
  PromptAccepted,
  PromptRefused,
  QueueAnswer,
  rejection,
  SystemStats,
  toPromptHistory,
  toQueueSnapshot,
  toRunnerInfo,
  toUploadedInput,
  UploadAnswer
} from "./ComfyResponses.js"
import { multipartUpload } from "./MultipartUpload.js"
import { describeCause, exchange, exchangeOk, readJson, statusFailure, unexpectedBody, unreachable } from "./RunnerHttp.js"

/** Timeouts and upload settings of the HTTP client. */
export interface ComfyClientOptions {
  /** Whole-exchange limit of ordinary calls (default 30 s). */
  readonly requestTimeout?: Duration.DurationInput
  /** Limit of an upload, body included (default 10 minutes). */
  readonly uploadTimeout?: Duration.DurationInput
  /** A download fails when no bytes arrive for this long (default 60 s); its headers obey `requestTimeout`. */
  readonly downloadIdleTimeout?: Duration.DurationInput
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
  readonly uploadInput: (
    runner: RunnerTarget,
    file: { readonly filename: string; readonly content_type: string; readonly content: Stream.Stream<Uint8Array, StorageError> }
  ) => Effect.Effect<UploadedInput, RunnerError | StorageError>
  readonly submit: (runner: RunnerTarget, prompt: SubmitPrompt) => Effect.Effect<Submitted, RunnerError | PromptRejected>
  readonly queue: (runner: RunnerTarget) => Effect.Effect<QueueSnapshot, RunnerError>
  readonly history: (runner: RunnerTarget, promptId: string) => Effect.Effect<Option.Option<PromptHistory>, RunnerError>
  readonly cancel: (runner: RunnerTarget, promptId: string) => Effect.Effect<void, RunnerError>
  readonly download: (runner: RunnerTarget, file: OutputFile) => Effect.Effect<Download, RunnerError>
}

/** Decodes a JSON answer with `schema`; a mismatch means the endpoint is not a working ComfyUI. */
const decodeAnswer = <A, I>(schema: Schema.Schema<A, I>) =>
(runner: RunnerTarget, response: HttpClientResponse.HttpClientResponse, what: string) =>
  readJson(runner, what, response).pipe(
    Effect.flatMap((body) =>
      Schema.decodeUnknown(schema)(body).pipe(
        Effect.mapError(() => unexpectedBody(runner, what, response.status, JSON.stringify(body)))
      )
    )
  )

/** Strips path components so a user's file name cannot pick a directory on the runner. */
const safeFilename = (name: string): string => {
  const base = name.split(/[\\/]/).pop()?.replace(/[\r\n"]/g, "_").trim() ?? ""
  return base === "" || base === "." || base === ".." ? "input" : base
}

/** Builds the HTTP operations on `http`. */
export const makeComfyClient = (http: HttpClient.HttpClient, options: ComfyClientOptions = {}): ComfyClient => {
  const requestTimeout = options.requestTimeout ?? Duration.seconds(30)
  const uploadTimeout = options.uploadTimeout ?? Duration.minutes(10)
  const idleTimeout = options.downloadIdleTimeout ?? Duration.seconds(60)
  const subfolder = options.uploadSubfolder ?? "wes"
  const overwrite = options.uploadOverwrite ?? false

  const getJson = <A, I>(runner: RunnerTarget, path: string, schema: Schema.Schema<A, I>) =>
    exchangeOk(
      http,
      runner,
      HttpClientRequest.get(path).pipe(HttpClientRequest.acceptJson),
      requestTimeout,
      (response, what) => decodeAnswer(schema)(runner, response, what)
    )

  const postEmpty = (runner: RunnerTarget, path: string, body: unknown) =>
    exchangeOk(
      http,
      runner,
      HttpClientRequest.post(path).pipe(HttpClientRequest.bodyUnsafeJson(body)),
      requestTimeout,
      // The answer is an empty 200; reading it only frees the connection, so a read failure changes nothing.
      (response) => Effect.asVoid(response.text.pipe(Effect.ignore))
    )

  /**
   * Deletes the prompt from the queue, then interrupts it only if the queue shows it running:
   * before 0.3.57 `/interrupt` ignores its `prompt_id` and stops whatever runs, so cancelling a
   * pending prompt must not send one. (A prompt that starts between the two is then running, and
   * interrupted; from 0.3.57 the `prompt_id` makes the interrupt exact.)
   */
  const cancel = (runner: RunnerTarget, promptId: string): Effect.Effect<void, RunnerError> =>
    postEmpty(runner, "/queue", { delete: [promptId] }).pipe(
      Effect.zipRight(getJson(runner, "/queue", QueueAnswer)),
      Effect.flatMap((q) =>
        toQueueSnapshot(q).running.includes(promptId) ? postEmpty(runner, "/interrupt", { prompt_id: promptId }) : Effect.void)
    )

  const submit = (runner: RunnerTarget, p: SubmitPrompt): Effect.Effect<Submitted, RunnerError | PromptRejected> => {
    const body = {
      prompt: p.prompt,
      prompt_id: p.prompt_id,
      client_id: p.client_id,
      extra_data: { ...p.extra_data, wes_workflow_id: p.extra_data.wes_workflow_id ?? p.prompt_id }
    }
    const rejected = (r: { error_type: string; message: string; error_node: string | null }) =>
      new PromptRejected({ runner_id: runner.id, ...r })
    return exchange(
      http,
      runner,
      HttpClientRequest.post("/prompt").pipe(HttpClientRequest.acceptJson, HttpClientRequest.bodyUnsafeJson(body)),
      requestTimeout,
      (response, what): Effect.Effect<Submitted, RunnerError | PromptRejected> => {
        if (response.status === 200) {
          return decodeAnswer(PromptAccepted)(runner, response, what).pipe(
            Effect.flatMap((ok) => {
              if (ok.prompt_id !== p.prompt_id) {
                // Servers before 0.3.45 mint their own id: WES could not follow the prompt. Take it back.
                return cancel(runner, ok.prompt_id).pipe(
                  Effect.catchAll((e) => Effect.logWarning(`could not withdraw prompt ${ok.prompt_id}: ${e.message}`)),
                  Effect.zipRight(Effect.fail(rejected({
                    error_type: "unsupported_runner",
                    message: `The runner ignored the prompt id WES sent (it answered ${ok.prompt_id}): WES needs ComfyUI 0.3.45 or later`,
                    error_node: null
                  })))
                )
              }
              if (!hasNodeErrors(ok.node_errors)) return Effect.succeed({ prompt_id: ok.prompt_id, number: ok.number })
              // Some outputs were dropped: the prompt is invalid. Take it back before saying so.
              return cancel(runner, ok.prompt_id).pipe(
                Effect.catchAll((e) =>
                  Effect.logWarning(`could not withdraw partially invalid prompt ${ok.prompt_id}: ${e.message}`)
                ),
                Effect.zipRight(Effect.fail(rejected(partialRejection(ok.node_errors))))
              )
            })
          )
        }
        if (response.status === 400) {
          return readJson(runner, what, response).pipe(
            Effect.catchAll(() => statusFailure(runner, what, response)),
            Effect.flatMap((json) =>
              Schema.decodeUnknown(PromptRefused)(json).pipe(
                Effect.matchEffect({
                  onFailure: () => statusFailure(runner, what, response),
                  onSuccess: (refused) => Effect.fail(rejected(rejection(refused)))
                })
              )
            )
          )
        }
        return statusFailure(runner, what, response)
      }
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
      const request = HttpClientRequest.post("/upload/image").pipe(
        HttpClientRequest.acceptJson,
        HttpClientRequest.bodyStream(body, { contentType })
      )
      return yield* exchangeOk(
        http,
        runner,
        request,
        uploadTimeout,
        (response, what) => decodeAnswer(UploadAnswer)(runner, response, what).pipe(Effect.map(toUploadedInput))
      ).pipe(
        // A failing content stream surfaces as a transport error of the request: report the real cause.
        Effect.catchAll((e): Effect.Effect<never, RunnerError | StorageError> =>
          Effect.flatMap(Ref.get(storageFailure), (storage): Effect.Effect<never, RunnerError | StorageError> =>
            Option.isSome(storage) ? Effect.fail(storage.value) : Effect.fail(e))
        )
      )
    })

  return {
    probe: (runner) => getJson(runner, "/system_stats", SystemStats).pipe(Effect.map(toRunnerInfo)),
    uploadInput,
    submit,
    queue: (runner) => getJson(runner, "/queue", QueueAnswer).pipe(Effect.map(toQueueSnapshot)),
    history: (runner, promptId) =>
      getJson(runner, `/history/${encodeURIComponent(promptId)}`, HistoryAnswer).pipe(
        Effect.flatMap((answer) => {
          if (!Object.hasOwn(answer, promptId)) return Effect.succeed(Option.none())
          return Schema.decodeUnknown(HistoryEntry)(answer[promptId]).pipe(
            Effect.mapError(() =>
              unexpectedBody(runner, `GET /history/${promptId}`, 200, JSON.stringify(answer[promptId]))
            ),
            Effect.map((entry) => Option.some(toPromptHistory(entry)))
          )
        })
      ),
    cancel,
    download: (runner, file) =>
      exchangeOk(
        http,
        runner,
        HttpClientRequest.get("/view").pipe(
          HttpClientRequest.setUrlParams({ filename: file.filename, subfolder: file.subfolder, type: file.type })
        ),
        requestTimeout,
        (response, what) =>
          Effect.succeed<Download>({
            content_type: response.headers["content-type"] ?? "application/octet-stream",
            stream: response.stream.pipe(
              Stream.mapError((e) => unreachable(runner, `${what}: download broke off: ${describeCause(e.cause ?? e)}`)),
              Stream.timeoutFail(
                () => unreachable(runner, `${what}: download stalled for ${Duration.format(Duration.decode(idleTimeout))}`),
                idleTimeout
              )
            )
          })
      )
  }
}
