/** Use cases of workflows: create (from JSON or a template), rerun, get, list, cancel, outputs, follow. */
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { User } from "../accounts/Account.js"
import { type Blob, BlobStore, inputBlobKey } from "../shared/BlobStore.js"
import { DispatchQueue } from "../dispatch/Dispatch.js"
import { Conflict, type NoEligibleRunner, NotFound, type StorageError, type TierLimitExceeded, ValidationError } from "../shared/Errors.js"
import { IdGenerator, isUuid, type ManagedRunnerId, type RunnerId, type WorkflowId } from "../shared/Ids.js"
import type { JsonObject } from "../shared/Json.js"
import { transition } from "../dispatch/Lifecycle.js"
import { summaryJson } from "../Wire.js"
import { pageOf, type PageInput, type Paged } from "../shared/Pagination.js"
import { findPlaceholders, isParamField, placeholderKey, type ResolvedParam, resolveParams, type SuppliedParam } from "./Placeholders.js"
import { RunnerGateway } from "../runners/RunnerGateway.js"
import { Scheduler } from "../dispatch/Scheduler.js"
import { MAX_TAGS, normalizeTag, normalizeTags, parseTagList } from "../shared/Tags.js"
import { TemplateRepository } from "../templates/TemplateRepository.js"
import { limitExceeded, TierPolicy } from "../accounts/Tier.js"
import { Transactor } from "../shared/Transactor.js"
import { requireText } from "../shared/Validation.js"
import {
  assignTo,
  isTerminal,
  runnerOf,
  type Workflow,
  type WorkflowOutput,
  WorkflowStatus,
  type WorkflowSummary
} from "./Workflow.js"
import { type WorkflowEvent, WorkflowEventBus } from "./WorkflowEvents.js"
import { validateWorkflowJson } from "./WorkflowJson.js"
import { WorkflowRepository } from "./WorkflowRepository.js"
import { WorkflowTransition } from "./WorkflowStatus.js"

/** See `WorkflowService.followStart`. */
export interface FollowStart {
  readonly first: ReadonlyArray<WorkflowEvent>
  readonly after: Option.Option<number>
}

/** A file part of a request, ready to be streamed into the blob store. */
export interface UploadedFile {
  readonly filename: string
  readonly content_type: string
  readonly content: Stream.Stream<Uint8Array, StorageError>
}

export interface CreateWorkflowInput {
  /** 1-200 characters. */
  readonly name?: string | undefined
  /** The parsed definition (API format). Exactly one of `workflow_json` and `template_id`. */
  readonly workflow_json?: unknown
  /** Start from one of the caller's templates instead. */
  readonly template_id?: string | undefined
  /** The comma-separated form field, or a list. */
  readonly tags?: string | ReadonlyArray<string> | undefined
  /** `$name` / `#name` fields. */
  readonly params?: ReadonlyArray<SuppliedParam<UploadedFile>> | undefined
  readonly idempotency_key?: string | undefined
}

export interface RerunWorkflowInput {
  readonly params?: ReadonlyArray<SuppliedParam<UploadedFile>> | undefined
  readonly idempotency_key?: string | undefined
}

export interface ListWorkflowsInput extends PageInput {
  readonly status?: string | undefined
  readonly tag?: string | undefined
}

/**
 * A repeat of an idempotent request gets the first response again: the workflow as it was when
 * it was accepted, whatever it has become since.
 */
export const asFirstAnswered = (w: Workflow): Workflow => ({
  ...w,
  status: "accepted",
  updated_at: w.created_at,
  started_at: null,
  completed_at: null,
  prompt_id: null,
  queue_number: null,
  error_node: null,
  exception_type: null,
  exception_message: null
})

/** How long an `Idempotency-Key` is remembered. */
export const IDEMPOTENCY_WINDOW = Duration.hours(24)
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/
const NAME_MAX = 200
/** How long cancel waits for the runner before leaving the rest to the tracker. */
const CANCEL_ON_RUNNER_TIMEOUT = Duration.seconds(5)

type CreateError = ValidationError | NoEligibleRunner | TierLimitExceeded | NotFound | StorageError

export class WorkflowService extends Context.Tag("@wes/core/WorkflowService")<WorkflowService, {
  readonly create: (user: User, input: CreateWorkflowInput) => Effect.Effect<Workflow, CreateError>
  readonly rerun: (user: User, id: string, input: RerunWorkflowInput) => Effect.Effect<Workflow, CreateError>
  readonly get: (user: User, id: string) => Effect.Effect<Workflow, NotFound | StorageError>
  readonly list: (user: User, input: ListWorkflowsInput) => Effect.Effect<Paged<WorkflowSummary>, ValidationError | StorageError>
  /** Cancels an unfinished workflow (409 `Conflict` when it already finished). */
  readonly cancel: (user: User, id: string) => Effect.Effect<Workflow, NotFound | Conflict | StorageError>
  readonly outputs: (user: User, id: string) => Effect.Effect<ReadonlyArray<WorkflowOutput>, NotFound | StorageError>
  readonly openOutput: (
    user: User,
    id: string,
    outputId: string
  ) => Effect.Effect<{ readonly output: WorkflowOutput; readonly blob: Blob }, NotFound | StorageError>
  /**
   * The workflow's events: first its current `status`, then the events after `lastEventId` (when
   * given) or from now on, ending after `done`. A finished workflow yields `status`, `done`.
   */
  readonly follow: (
    user: User,
    id: string,
    lastEventId?: number
  ) => Effect.Effect<Stream.Stream<WorkflowEvent, StorageError>, NotFound | StorageError>
  /**
   * Where `follow` starts, for a server that fans one log subscription out to many clients:
   * the events to send first, and the sequence after which the workflow's log continues (none
   * when the workflow is already finished: `first` then ends with `done`).
   */
  readonly followStart: (user: User, id: string, lastEventId?: number) => Effect.Effect<FollowStart, NotFound | StorageError>
}>() {
  static Live: Layer.Layer<
    WorkflowService,
    never,
    | WorkflowRepository
    | TemplateRepository
    | WorkflowEventBus
    | BlobStore
    | Transactor
    | TierPolicy
    | Scheduler
    | IdGenerator
    | RunnerGateway
    | DispatchQueue
  > = Layer.effect(WorkflowService, make())
}

function make() {
  return Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const templates = yield* TemplateRepository
    const bus = yield* WorkflowEventBus
    const blobs = yield* BlobStore
    const tx = yield* Transactor
    const policy = yield* TierPolicy
    const scheduler = yield* Scheduler
    const ids = yield* IdGenerator
    const gateway = yield* RunnerGateway
    const dispatch = yield* DispatchQueue
    const services = Context.empty().pipe(
      Context.add(WorkflowRepository, repo),
      Context.add(WorkflowEventBus, bus),
      Context.add(BlobStore, blobs),
      Context.add(Transactor, tx)
    )

    const findOwned = (user: User, id: string) =>
      isUuid(id)
        ? Effect.flatMap(repo.findForUser(user.id, id), Option.match({
          onNone: () => Effect.fail(NotFound.workflow()),
          onSome: Effect.succeed
        }))
        : Effect.fail(NotFound.workflow())

    const checkIdempotencyKey = (key: string | undefined) =>
      key === undefined || IDEMPOTENCY_KEY.test(key)
        ? Effect.void
        : Effect.fail(ValidationError.field("Idempotency-Key", "must be 1-255 visible ASCII characters"))

    const priorRequest = (user: User, key: string | undefined) =>
      Effect.gen(function*() {
        if (key === undefined) return Option.none<Workflow>()
        const since = DateTime.subtractDuration(yield* DateTime.now, IDEMPOTENCY_WINDOW)
        return yield* repo.findByIdempotencyKey(user.id, key, since)
      })

    /** Stores uploads and inherited files under the new workflow; the `workflow_params` pairs. */
    const storeParams = (
      workflowId: string,
      resolved: ReadonlyArray<ResolvedParam<UploadedFile>>,
      stored: Array<string>
    ) =>
      Effect.forEach(resolved, (r) =>
        Effect.gen(function*() {
          const key = placeholderKey(r.placeholder)
          if (r.value._tag === "Upload") {
            const blobKey = inputBlobKey(workflowId, r.placeholder.name, r.value.file.filename)
            stored.push(blobKey)
            yield* blobs.put(blobKey, r.value.file.content, r.value.file.content_type)
            return [key, blobKey] as const
          }
          if (r.placeholder.kind !== "file") return [key, r.value.value] as const
          // A rerun inherits a file: the new workflow gets its own copy, since each workflow's
          // inputs are deleted when it finishes.
          const from = r.value.value
          const blobKey = inputBlobKey(workflowId, r.placeholder.name, from.split("/").pop() ?? "file")
          stored.push(blobKey)
          const copied = yield* blobs.copy(from, blobKey)
          if (!copied) {
            return yield* Effect.fail(new ValidationError({
              message: `Parameter validation failed: $${r.placeholder.name} must be sent again, ` +
                "the original workflow's upload was deleted when it finished",
              details: [{ field: `$${r.placeholder.name}`, message: "the original upload no longer exists; send the file again" }]
            }))
          }
          return [key, blobKey] as const
        }))

    /** Shared tail of create and rerun: params, limits, runner, files, insert, first event. */
    const submit = (
      user: User,
      spec: {
        readonly name: string
        readonly workflow_json: JsonObject
        readonly tags: ReadonlyArray<string>
        readonly params: ReadonlyArray<SuppliedParam<UploadedFile>>
        readonly inherited: Workflow["workflow_params"]
        readonly idempotency_key: string | undefined
      }
    ) =>
      Effect.gen(function*() {
        const placeholders = yield* findPlaceholders(spec.workflow_json)
        const resolved = yield* resolveParams(placeholders, spec.params, spec.inherited)
        const limits = policy.limitsFor(user.tier)
        yield* policy.check(user.tier, "workflow_params", 0, resolved.length)
        const now = yield* DateTime.now
        const dayStart = DateTime.startOf(now, "day")
        // Fast rejections before any file is stored; the insert re-checks atomically.
        yield* policy.check(user.tier, "active_workflows", yield* repo.countActive(user.id))
        yield* policy.check(user.tier, "workflows_per_day", yield* repo.countCreatedSince(user.id, dayStart))
        const runner = yield* scheduler.choose(user, spec.tags)
        const id = yield* ids.next
        const stored: Array<string> = []
        const cleanup = Effect.forEach(stored, (k) => Effect.ignore(blobs.delete(k)), { discard: true })
        return yield* Effect.gen(function*() {
          const params = yield* storeParams(id, resolved, stored)
          const workflow: Workflow = {
            id: id as WorkflowId,
            user_id: user.id,
            name: spec.name,
            status: "accepted",
            tags: spec.tags,
            created_at: now,
            updated_at: now,
            started_at: null,
            completed_at: null,
            ...assignTo(runner.kind === "user"
              ? { kind: "user", id: runner.id as RunnerId }
              : { kind: "managed", id: runner.id as ManagedRunnerId }),
            workflow_json: spec.workflow_json,
            workflow_params: params,
            prompt_id: null,
            queue_number: null,
            error_node: null,
            exception_type: null,
            exception_message: null,
            idempotency_key: spec.idempotency_key ?? null,
            dispatch_attempts: 0,
            submitted_at: null
          }
          const since = DateTime.subtractDuration(now, IDEMPOTENCY_WINDOW)
          return yield* tx.withTransaction(Effect.gen(function*() {
            const inserted = yield* repo.insert(workflow, {
              limits: {
                active_workflows: limits.active_workflows,
                workflows_per_day: limits.workflows_per_day,
                day_start: dayStart
              },
              idempotency_since: since
            })
            yield* bus.publish(inserted.id, [{ type: "status", data: summaryJson(inserted) }])
            yield* dispatch.notify(runner.id)
            return inserted
          }))
        }).pipe(
          Effect.catchTags({
            LimitReached: (e) => Effect.fail(limitExceeded(e.limit, user.tier, limits[e.limit])),
            DuplicateIdempotencyKey: (e) => Effect.as(cleanup, asFirstAnswered(e.existing))
          }),
          Effect.tapError(() => cleanup)
        )
      })

    const normalizeTagInput = (tags: CreateWorkflowInput["tags"]) =>
      tags === undefined || typeof tags === "string" ? parseTagList(tags) : normalizeTags(tags)

    const checkParamFields = (params: ReadonlyArray<SuppliedParam<UploadedFile>>) => {
      const bad = params.find((p) => !isParamField(p.field))
      return bad === undefined
        ? Effect.void
        : Effect.fail(ValidationError.field(bad.field, "is not a parameter field (names start with $ or #)"))
    }

    const create = (user: User, input: CreateWorkflowInput) =>
      Effect.gen(function*() {
        yield* checkIdempotencyKey(input.idempotency_key)
        const prior = yield* priorRequest(user, input.idempotency_key)
        if (Option.isSome(prior)) return asFirstAnswered(prior.value)
        const name = yield* requireText("name", input.name, 1, NAME_MAX)
        const hasJson = input.workflow_json !== undefined
        const hasTemplate = input.template_id !== undefined && input.template_id !== ""
        if (hasJson && hasTemplate) {
          return yield* Effect.fail(ValidationError.field("template_id", "send either workflow_json or template_id, not both"))
        }
        if (!hasJson && !hasTemplate) return yield* Effect.fail(ValidationError.field("workflow_json", "is required"))
        const definition = hasJson
          ? input.workflow_json
          : yield* (isUuid(input.template_id!) ? templates.findForUser(user.id, input.template_id!) : Effect.succeedNone).pipe(
            Effect.flatMap(Option.match({ onNone: () => Effect.fail(NotFound.template()), onSome: (t) => Effect.succeed(t.body) }))
          )
        const workflow_json = yield* validateWorkflowJson(definition)
        const tags = yield* normalizeTagInput(input.tags)
        if (tags.length > MAX_TAGS) return yield* Effect.fail(ValidationError.field("tags", `at most ${MAX_TAGS} tags are allowed`))
        const params = input.params ?? []
        yield* checkParamFields(params)
        return yield* submit(user, { name, workflow_json, tags, params, inherited: [], idempotency_key: input.idempotency_key })
      })

    const rerun = (user: User, id: string, input: RerunWorkflowInput) =>
      Effect.gen(function*() {
        yield* checkIdempotencyKey(input.idempotency_key)
        const original = yield* findOwned(user, id)
        const prior = yield* priorRequest(user, input.idempotency_key)
        if (Option.isSome(prior)) return asFirstAnswered(prior.value)
        const params = input.params ?? []
        yield* checkParamFields(params)
        return yield* submit(user, {
          name: original.name,
          workflow_json: original.workflow_json,
          tags: original.tags,
          params,
          inherited: original.workflow_params,
          idempotency_key: input.idempotency_key
        })
      })

    const decodeStatus = Schema.decodeUnknownEither(WorkflowStatus)

    const list = (user: User, input: ListWorkflowsInput) =>
      Effect.gen(function*() {
        const page = yield* pageOf(input)
        let status: WorkflowStatus | undefined
        if (input.status !== undefined && input.status !== "") {
          const decoded = decodeStatus(input.status)
          if (Either.isLeft(decoded)) {
            return yield* Effect.fail(ValidationError.field("status", `must be one of ${WorkflowStatus.literals.join(", ")}`))
          }
          status = decoded.right
        }
        let tag: string | undefined
        if (input.tag !== undefined && input.tag !== "") {
          const normalized = normalizeTag(input.tag)
          if (Either.isLeft(normalized)) return yield* Effect.fail(ValidationError.field("tag", normalized.left))
          tag = normalized.right
        }
        return yield* repo.list(user.id, { ...page, status, tag })
      })

    const cancel = (user: User, id: string) =>
      Effect.gen(function*() {
        yield* findOwned(user, id)
        const { after, before } = yield* transition(id, WorkflowTransition.Cancelled()).pipe(
          Effect.catchTag("IllegalTransition", (e) => Effect.fail(new Conflict({ message: `Workflow is already ${e.from}` })))
        )
        const onRunner = before.status === "queued" || before.status === "running" || before.submitted_at !== null
        const ref = runnerOf(before)
        if (onRunner && ref !== undefined) {
          // Best effort here; the runner's tracker also removes prompts of cancelled workflows.
          yield* scheduler.resolve(ref).pipe(
            Effect.flatMap(Option.match({
              onNone: () => Effect.void,
              onSome: (target) => gateway.cancel(target, before.prompt_id ?? before.id)
            })),
            Effect.timeout(CANCEL_ON_RUNNER_TIMEOUT),
            Effect.catchAll((e) => Effect.logWarning("could not cancel on the runner", { workflow_id: id, error: String(e) }))
          )
        }
        return after
      }).pipe(Effect.provide(services))

    const outputs = (user: User, id: string) => Effect.flatMap(findOwned(user, id), (w) => repo.listOutputs(w.id))

    const openOutput = (user: User, id: string, outputId: string) =>
      Effect.gen(function*() {
        const all = yield* outputs(user, id)
        const output = all.find((o) => o.id === outputId)
        if (output === undefined) return yield* Effect.fail(NotFound.output())
        const blob = yield* blobs.get(output.blob_key)
        if (Option.isNone(blob)) return yield* Effect.fail(NotFound.output())
        return { output, blob: blob.value }
      })

    const followStart = (user: User, id: string, lastEventId?: number) =>
      Effect.gen(function*() {
        yield* findOwned(user, id)
        // The latest sequence first, then the record: a transition in between is replayed, not lost.
        const latest = yield* bus.lastSeq(id)
        const current = yield* findOwned(user, id)
        const now = yield* DateTime.now
        // An id from the future (or another server's log) is read as "up to date".
        const from = Math.min(lastEventId ?? latest, latest)
        const statusEvent = (type: "status" | "done", seq: number): WorkflowEvent => ({
          workflow_id: id,
          seq,
          type,
          data: summaryJson(current),
          created_at: now
        })
        if (isTerminal(current.status)) return { first: [statusEvent("status", latest), statusEvent("done", latest)], after: Option.none<number>() } satisfies FollowStart
        return { first: [statusEvent("status", from)], after: Option.some(from) } satisfies FollowStart
      })

    const follow = (user: User, id: string, lastEventId?: number) =>
      Effect.map(followStart(user, id, lastEventId), (start) =>
        Stream.concat(
          Stream.fromIterable(start.first),
          Option.match(start.after, {
            onNone: () => Stream.empty,
            onSome: (after) => bus.subscribe(id, after).pipe(Stream.takeUntil((e) => e.type === "done"))
          })
        ))

    return WorkflowService.of({
      create,
      rerun,
      get: findOwned,
      list,
      cancel,
      outputs,
      openOutput,
      follow,
      followStart
    })
  })
}
