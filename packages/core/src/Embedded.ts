/**
 * A promise-based facade over the use cases, for backends that do not use Effect.
 *
 * ```ts
 * const wes = await createWes({ store: MemoryStoreLive, gateway: RunnerGatewayNode() })
 * const user = await wes.createUser({ tier: "pro" })
 * await wes.registerRunner(user, { name: "gpu-1", endpoint: "http://127.0.0.1:8188" })
 * const workflow = await wes.createWorkflow(user, { name: "first", workflow_json, params: { $prompt: "a cat" } })
 * for await (const event of wes.follow(user, workflow.id)) console.log(event.type, event.data)
 * const [output] = await wes.outputs(user, workflow.id)
 * const { bytes } = await wes.downloadOutput(user, workflow.id, output.id)
 * await wes.close()
 * ```
 *
 * Every method returns the same JSON shapes as the HTTP API (timestamps as ISO strings) and
 * rejects with the core's typed errors (`ValidationError`, `WorkflowNotFound`, `NoEligibleRunner`, ...):
 * instances with a `_tag` and a `message`. The Effect services stay reachable through `run` and
 * `runtime`.
 */
import * as Cause from "effect/Cause"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { CreateUserRequest, IssuedToken, IssueTokenRequest, User } from "./domain/Account.js"
import { AccountService, type TokenUseOptions } from "./usecases/AccountService.js"
import { concatBytes } from "./domain/Bytes.js"
import type { Crypto } from "./domain/Crypto.js"
import type { DispatcherOptions } from "./dispatch/Dispatcher.js"
import { StorageError, ValidationError } from "./domain/Errors.js"
import type { IdGenerator } from "./domain/Ids.js"
import { CreateRunnerRequest, Runner } from "./domain/Runner.js"
import type { RunnerGateway } from "./ports/RunnerGateway.js"
import { RunnerProbe } from "./ports/RunnerProbe.js"
import { RunnerService } from "./usecases/RunnerService.js"
import { TierPolicy, type TierTableOverride } from "./domain/Tier.js"
import { PlatformLive, type StoreServices, type UseCaseServices, useCasesLayer } from "./UseCases.js"
import { toDetail, WorkflowDetail, WorkflowOutputView, type WorkflowStatus, WorkflowSummary } from "./domain/Workflow.js"
import { WorkflowEvent } from "./ports/WorkflowEvents.js"
import { checkJsonText } from "./domain/WorkflowJson.js"
import { type UploadedFile, WorkflowService } from "./usecases/WorkflowService.js"

/** What `createWes` composes. Only `store` and `gateway` are required. */
export interface WesOptions {
  /** Every store interface: `MemoryStoreLive` (`@wes/storage-memory`) or `PgStoreLive(...)` (`@wes/storage-pg`). */
  readonly store: Layer.Layer<StoreServices, unknown>
  /** How WES talks to runners: `RunnerGatewayNode()` (`@wes/runner-client`). */
  readonly gateway: Layer.Layer<RunnerGateway, unknown>
  /** Changes to the default tier table, e.g. `{ free: { active_workflows: 1 } }` (default: none). */
  readonly tiers?: TierTableOverride
  /**
   * The reachability probe of a runner's endpoint when it is registered or changed: a timeout
   * (default 5 seconds), or `false` to accept every endpoint without asking it.
   */
  readonly probe?: Duration.Input | false
  /** Ids and crypto (default: UUID v7 and the Web Crypto API). */
  readonly platform?: Layer.Layer<IdGenerator | Crypto, unknown>
  /**
   * The dispatcher submits accepted workflows to their runners and follows them to the end. It
   * runs by default (tuned by these options); `false` leaves that to another process sharing the
   * store (then workflows stay `accepted` here).
   */
  readonly dispatcher?: Partial<DispatcherOptions> | false
  /** How often token use (`last_used_at`) is written back. */
  readonly tokenUse?: TokenUseOptions
}

/** The services `run` can use. */
export type WesServices = UseCaseServices | StoreServices | RunnerGateway | RunnerProbe | TierPolicy | IdGenerator | Crypto

/** A user, as returned by the operator API. */
export type WesUser = typeof User.Encoded
/** A newly issued token: `token` is shown only here. */
export type WesIssuedToken = typeof IssuedToken.Encoded
/** A user-owned runner. */
export type WesRunner = typeof Runner.Encoded
/** A workflow in detail form (`GET /v1/workflow/{id}`). */
export type WesWorkflow = typeof WorkflowDetail.Encoded
/** A workflow in summary form (lists). */
export type WesWorkflowSummary = typeof WorkflowSummary.Encoded
/** An output file of a workflow. */
export type WesOutput = typeof WorkflowOutputView.Encoded
/** One event of a workflow: `status`, `queue`, `progress`, `executing`, `output`, then `done`. */
export type WesWorkflowEvent = typeof WorkflowEvent.Encoded

/** A user, by id or as returned by `createUser`. */
export type WesUserRef = string | { readonly id: string }

/** A file for a `$file(...)` parameter. */
export interface WesFile {
  readonly filename: string
  /** Default `application/octet-stream`. */
  readonly content_type?: string
  /** The bytes, or any async iterable of chunks (a Node `Readable`, a web `ReadableStream`). */
  readonly data: Uint8Array | AsyncIterable<Uint8Array>
}

export interface WesCreateWorkflow {
  /** 1-200 characters. */
  readonly name: string
  /** The workflow in ComfyUI API format: an object, or its JSON text. Or use `template_id`. */
  readonly workflow_json?: unknown
  /** One of the user's templates instead of `workflow_json`. */
  readonly template_id?: string
  /** Every tag must be carried by the runner the workflow goes to. */
  readonly tags?: ReadonlyArray<string> | string
  /**
   * Values of the workflow's placeholders, by form field: `$name` feeds `$text(name)` and
   * `$file(name)`, `#name` feeds `#choice(name)`.
   */
  readonly params?: { readonly [field: string]: string | number | boolean | WesFile }
  /** A repeat with the same key within 24 h returns the first workflow. */
  readonly idempotency_key?: string
}

export interface WesListWorkflows {
  readonly page?: number
  readonly per_page?: number
  readonly status?: WorkflowStatus
  readonly tag?: string
}

/** An output file, opened for reading. */
export interface WesOutputContent {
  readonly output: WesOutput
  readonly content_type: string
  readonly size: number
}

/** WES in your process. Create it with `createWes`; `close` it when done. */
export interface Wes {
  /** Creates a user (the operator's `POST /admin/v1/users`). */
  readonly createUser: (input: typeof CreateUserRequest.Encoded) => Promise<WesUser>
  readonly getUser: (user: WesUserRef) => Promise<WesUser>
  /** Issues an API token for a user; its value is in this result only. */
  readonly issueToken: (user: WesUserRef, input: typeof IssueTokenRequest.Encoded) => Promise<WesIssuedToken>
  /** The user behind an `Authorization` header value (`Bearer wes_...`). */
  readonly authenticate: (authorization: string | undefined) => Promise<WesUser>
  /** Registers a runner (a ComfyUI server) of the user; its endpoint is probed unless `probe: false`. */
  readonly registerRunner: (user: WesUserRef, input: typeof CreateRunnerRequest.Encoded) => Promise<WesRunner>
  /** Creates a workflow: validated, assigned to a runner, then dispatched. */
  readonly createWorkflow: (user: WesUserRef, input: WesCreateWorkflow) => Promise<WesWorkflow>
  readonly getWorkflow: (user: WesUserRef, id: string) => Promise<WesWorkflow>
  /** Newest first. */
  readonly listWorkflows: (
    user: WesUserRef,
    input?: WesListWorkflows
  ) => Promise<{ readonly workflows: ReadonlyArray<WesWorkflowSummary>; readonly total: number }>
  /** Cancels an unfinished workflow (`Conflict` when it has already finished). */
  readonly cancelWorkflow: (user: WesUserRef, id: string) => Promise<WesWorkflow>
  /**
   * The workflow's events: its current `status` first, then every later event, ending after
   * `done`. With `lastEventId`, the events after that one instead. Break out of the loop to stop.
   */
  readonly follow: (user: WesUserRef, id: string, options?: { readonly lastEventId?: number }) => AsyncIterable<WesWorkflowEvent>
  /** Waits until the workflow has finished (in any terminal status) and returns it. */
  readonly waitForWorkflow: (user: WesUserRef, id: string) => Promise<WesWorkflow>
  readonly outputs: (user: WesUserRef, id: string) => Promise<ReadonlyArray<WesOutput>>
  /** An output file, read whole. */
  readonly downloadOutput: (user: WesUserRef, id: string, outputId: string) => Promise<WesOutputContent & { readonly bytes: Uint8Array }>
  /** An output file as a stream of chunks (for large files). */
  readonly openOutput: (
    user: WesUserRef,
    id: string,
    outputId: string
  ) => Promise<WesOutputContent & { readonly content: AsyncIterable<Uint8Array> }>
  /** Runs any Effect over WES's services (templates, managed runners, ...), rejecting with its typed error. */
  readonly run: <A, E>(effect: Effect.Effect<A, E, WesServices>) => Promise<A>
  /** The runtime holding the services, for Effect code. */
  readonly runtime: ManagedRuntime.ManagedRuntime<WesServices, unknown>
  /** Stops the dispatcher (releasing its runners) and closes the store. Idempotent. */
  readonly close: () => Promise<void>
}

/** Every layer `createWes` composes, for Effect users who want the same defaults. */
export const embeddedLayer = (options: WesOptions): Layer.Layer<WesServices, unknown> => {
  const gateway = options.gateway
  const probe = options.probe === false ? RunnerProbe.Off : RunnerProbe.layer(options.probe).pipe(Layer.provide(gateway))
  const base = Layer.mergeAll(
    options.store,
    gateway,
    probe,
    TierPolicy.layer(options.tiers ?? {}),
    options.platform ?? PlatformLive
  )
  const tokenUse = options.tokenUse === undefined ? {} : { tokenUse: options.tokenUse }
  const app = options.dispatcher === false
    ? useCasesLayer(tokenUse)
    : useCasesLayer({ ...tokenUse, dispatcher: options.dispatcher ?? {} })
  return app.pipe(Layer.provideMerge(base))
}

/** The error a failed effect ends with: the typed failure itself, else the defect. */
const errorOf = <E>(cause: Cause.Cause<E>): unknown => Cause.squash(cause)

const encodeUser = Schema.encodeSync(User)
const encodeToken = Schema.encodeSync(IssuedToken)
const encodeRunner = Schema.encodeSync(Runner)
const encodeDetail = Schema.encodeSync(WorkflowDetail)
const encodeSummary = Schema.encodeSync(WorkflowSummary)
const encodeOutput = Schema.encodeSync(WorkflowOutputView)
const encodeEvent = Schema.encodeSync(WorkflowEvent)

const idOf = (user: WesUserRef) => (typeof user === "string" ? user : user.id)

const parseJson = (value: unknown) => {
  if (typeof value !== "string") return Effect.succeed(value)
  const bounds = checkJsonText(value, "workflow_json")
  if (Result.isFailure(bounds)) return Effect.fail(bounds.failure)
  return Effect.try({
    try: () => JSON.parse(value) as unknown,
    catch: (e) =>
      new ValidationError({
        message: `workflow_json: is not valid JSON (${e instanceof Error ? e.message : String(e)})`,
        details: [{ field: "workflow_json", message: "is not valid JSON" }]
      })
  })
}

const uploadOf = (file: WesFile): UploadedFile => ({
  filename: file.filename,
  content_type: file.content_type ?? "application/octet-stream",
  content: file.data instanceof Uint8Array
    ? Stream.make(file.data)
    : Stream.fromAsyncIterable(file.data, (e) => new StorageError({ message: `could not read ${file.filename}: ${String(e)}`, cause: e }))
})

/**
 * Starts WES in this process over `options.store` and `options.gateway`: the use cases and (unless
 * `dispatcher: false`) the dispatcher. Rejects when a layer cannot start (e.g. the database is
 * unreachable).
 */
export const createWes = async (options: WesOptions): Promise<Wes> => {
  const runtime = ManagedRuntime.make(embeddedLayer(options))
  const started = await runtime.runPromiseExit(Effect.context<WesServices>())
  if (Exit.isFailure(started)) {
    await runtime.dispose()
    throw errorOf(started.cause)
  }
  /**
   * A stream as an async iterable whose errors are the stream's typed failures. The stream
   * starts on the first `next()`; `return()` (a `break` out of `for await`) stops it.
   */
  const iterate = <A, E>(stream: Stream.Stream<A, E, WesServices>): AsyncIterable<A> => Stream.toAsyncIterableWith(stream, started.value)

  const run = <A, E>(effect: Effect.Effect<A, E, WesServices>): Promise<A> =>
    runtime.runPromiseExit(effect).then((exit) => (Exit.isSuccess(exit) ? exit.value : Promise.reject(errorOf(exit.cause))))

  const userOf = (ref: WesUserRef) => Effect.flatMap(AccountService, (accounts) => accounts.getUser(idOf(ref)))

  /** Runs `f` with the user and the workflow service. */
  const asUser = <A, E>(ref: WesUserRef, f: (user: User, workflows: WorkflowService["Service"]) => Effect.Effect<A, E, WesServices>) =>
    run(Effect.gen(function*() {
      const user = yield* userOf(ref)
      return yield* f(user, yield* WorkflowService)
    }))

  const openOutput = (ref: WesUserRef, id: string, outputId: string) =>
    asUser(ref, (user, workflows) =>
      Effect.map(workflows.openOutput(user, id, outputId), ({ blob, output }) => ({
        output: encodeOutput(output),
        content_type: blob.content_type,
        size: blob.size,
        stream: blob.stream
      })))

  let closed: Promise<void> | undefined

  return {
    createUser: (input) => run(Effect.flatMap(AccountService, (a) => a.createUser(input)).pipe(Effect.map(encodeUser))),
    getUser: (ref) => run(Effect.map(userOf(ref), encodeUser)),
    issueToken: (ref, input) => run(Effect.flatMap(AccountService, (a) => a.issueToken(idOf(ref), input)).pipe(Effect.map(encodeToken))),
    authenticate: (authorization) =>
      run(Effect.flatMap(AccountService, (a) => a.authenticate(authorization)).pipe(Effect.map((p) => encodeUser(p.user)))),
    registerRunner: (ref, input) =>
      run(Effect.gen(function*() {
        const user = yield* userOf(ref)
        return encodeRunner(yield* (yield* RunnerService).create(user, input))
      })),
    createWorkflow: (ref, input) =>
      asUser(ref, (user, workflows) =>
        Effect.gen(function*() {
          const workflow_json = yield* parseJson(input.workflow_json)
          const params = Object.entries(input.params ?? {}).map(([field, value]) => ({
            field,
            value: typeof value === "object"
              ? { _tag: "File" as const, file: uploadOf(value) }
              : { _tag: "Text" as const, text: String(value) }
          }))
          const created = yield* workflows.create(user, {
            name: input.name,
            workflow_json,
            template_id: input.template_id,
            tags: input.tags,
            params,
            idempotency_key: input.idempotency_key
          })
          return encodeDetail(toDetail(created))
        })),
    getWorkflow: (ref, id) => asUser(ref, (user, workflows) => Effect.map(workflows.get(user, id), (w) => encodeDetail(toDetail(w)))),
    listWorkflows: (ref, input = {}) =>
      asUser(ref, (user, workflows) =>
        Effect.map(workflows.list(user, input), (page) => ({ workflows: page.items.map((w) => encodeSummary(w)), total: page.total }))),
    cancelWorkflow: (ref, id) =>
      asUser(ref, (user, workflows) => workflows.cancel(user, id).pipe(Effect.andThen(workflows.get(user, id)), Effect.map((w) => encodeDetail(toDetail(w))))),
    follow: (ref, id, options = {}) =>
      iterate(
        Stream.unwrap(Effect.gen(function*() {
          const user = yield* userOf(ref)
          return yield* (yield* WorkflowService).follow(user, id, options.lastEventId)
        })).pipe(Stream.map((event) => encodeEvent(event)))
      ),
    waitForWorkflow: (ref, id) =>
      asUser(ref, (user, workflows) =>
        workflows.follow(user, id).pipe(
          Effect.flatMap(Stream.runDrain),
          Effect.andThen(workflows.get(user, id)),
          Effect.map((w) => encodeDetail(toDetail(w)))
        )),
    outputs: (ref, id) => asUser(ref, (user, workflows) => Effect.map(workflows.outputs(user, id), (all) => all.map((o) => encodeOutput(o)))),
    downloadOutput: (ref, id, outputId) =>
      asUser(ref, (user, workflows) =>
        Effect.gen(function*() {
          const { blob, output } = yield* workflows.openOutput(user, id, outputId)
          const bytes = concatBytes(yield* Stream.runCollect(blob.stream))
          return { output: encodeOutput(output), content_type: blob.content_type, size: bytes.length, bytes }
        })),
    openOutput: async (ref, id, outputId) => {
      const { stream, ...rest } = await openOutput(ref, id, outputId)
      return { ...rest, content: iterate(stream) }
    },
    run,
    runtime,
    close: () => (closed ??= runtime.dispose())
  }
}
