/**
 * A typed WES client derived from the HttpApi declaration (`makeClient` of @wes/api, the contract's
 * package): every path, payload, response and error is typed from the same source the server is
 * built from.
 *
 *   1. registers a runner (a ComfyUI endpoint) with a tag of its own,
 *   2. submits a workflow with a file parameter (multipart FormData),
 *   3. follows the workflow's server-sent events with a progress bar,
 *   4. downloads the output.
 */
import { makeClient } from "@wes/api"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { ProgressBar, type SseEvent, sseEvents, type Terminal } from "./progress.js"

export interface ClientOptions {
  /** The server, e.g. http://127.0.0.1:8080. */
  readonly baseUrl: string
  /** A user's API token (`wes_...`). */
  readonly token: string
  /** The ComfyUI to register as a runner (it must be reachable from the WES server). */
  readonly comfyuiUrl: string
  /** The workflow, API format (JSON text); it takes the input file as `$file(image)`. */
  readonly workflowJson: string
  /** More text parameters, by form field (`$name` / `#name`). */
  readonly params?: Readonly<Record<string, string>>
  /** The input image. */
  readonly image: { readonly filename: string; readonly bytes: Uint8Array<ArrayBuffer> }
  /** Where the progress bar goes. */
  readonly terminal: Terminal
  /** Delete the runner at the end (default true). */
  readonly removeRunner?: boolean
}

export interface ClientResult {
  readonly workflowId: string
  readonly status: string
  readonly events: ReadonlyArray<SseEvent>
  readonly output: { readonly filename: string; readonly content_type: string; readonly bytes: Uint8Array }
}

const TAG = "example-client"

/** Everything, as one Effect over an HttpClient. */
export const runClient = (options: ClientOptions) =>
  Effect.gen(function*() {
    // Every request carries the token; the base URL prefixes every path.
    const client = yield* makeClient({ baseUrl: options.baseUrl, token: options.token })
    const log = (line: string) => options.terminal.write(`${line}\n`)

    const me = yield* client.user.get()
    log(`signed in as ${me.id} (${me.tier} tier, ${me.usage.active_workflows}/${me.limits.active_workflows} active workflows)`)

    // 1. A runner of our own, with a tag the workflow asks for, so it goes nowhere else.
    const runner = yield* client.runners.create({ payload: { name: "example client runner", endpoint: options.comfyuiUrl, tags: [TAG] } })
    log(`runner ${runner.id} -> ${runner.endpoint}`)

    // 2. The workflow and its file, as multipart form data (the API's only way in for files).
    const form = new FormData()
    form.append("name", "inverted by the example client")
    form.append("tags", TAG)
    form.append("workflow_json", new Blob([options.workflowJson], { type: "application/json" }), "workflow.json")
    form.append("$image", new Blob([options.image.bytes], { type: "image/png" }), options.image.filename)
    for (const [field, value] of Object.entries(options.params ?? {})) form.append(field, value)
    const created = yield* client.workflows.create({ payload: form })
    log(`workflow ${created.id} ${created.status}`)

    // 3. The event stream, read as it arrives (status, queue, executing, progress, output, ..., done):
    //    the response itself, not a decoded body, which would wait for the stream's end.
    const nodes = Object.keys(JSON.parse(options.workflowJson) as object).length
    const bar = new ProgressBar(nodes, options.terminal)
    const response = yield* client.workflows.subscribe({ params: { id: created.id }, query: {}, headers: {}, responseMode: "response-only" }).pipe(
      Effect.flatMap(HttpClientResponse.filterStatusOk)
    )
    const events = yield* sseEvents(response.stream).pipe(
      Stream.tap((event) => Effect.sync(() => bar.update(event))),
      Stream.takeUntil((event) => event.event === "done"),
      Stream.runCollect
    )

    // 4. The result and its first output file.
    const finished = yield* client.workflows.get({ params: { id: created.id } })
    if (finished.status !== "completed") {
      return yield* Effect.fail(new Error(`workflow ${finished.status}: ${finished.exception_type ?? ""} ${finished.exception_message ?? ""}`))
    }
    const { outputs } = yield* client.workflows.outputs({ params: { id: created.id } })
    const first = outputs[0]
    if (first === undefined) return yield* Effect.fail(new Error("the workflow produced no file"))
    // Without If-None-Match the answer is the file (a 304 is only for a client that sent its ETag).
    const bytes = yield* client.workflows.output({ params: { id: created.id, output_id: first.id }, headers: {} })
    if (bytes === undefined) return yield* Effect.fail(new Error("the output download answered without a body"))
    log(`downloaded ${first.filename} (${first.content_type}, ${bytes.length} bytes)`)

    if (options.removeRunner !== false) yield* client.runners.delete({ params: { id: runner.id } })
    return {
      workflowId: created.id,
      status: finished.status,
      events: Array.from(events),
      output: { filename: first.filename, content_type: first.content_type, bytes }
    } satisfies ClientResult
  })

/** The same, as a promise, on `fetch`. */
export const runClientPromise = (options: ClientOptions): Promise<ClientResult> =>
  Effect.runPromise(runClient(options).pipe(Effect.provide(FetchHttpClient.layer)))
