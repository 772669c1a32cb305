/**
 * Create and rerun: check the request, resolve its parameters, pick a runner, store the uploaded
 * files, then one store write (the workflow, its first event and the wake-up of its runner's
 * dispatcher, with the tier limits and the idempotency key checked atomically). Files stored for
 * a create that does not happen are released with the request's scope.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import type { User } from "../../domain/Account.js"
import { workflowsCreated } from "../Metrics.js"
import { limitExceeded, TierPolicy, type TierLimits } from "../../domain/Tier.js"
import { sizeText } from "../../domain/SizeText.js"
import { needsOf } from "../../domain/Needs.js"
import { Scheduler } from "../Scheduler.js"
import type { RunnerTarget } from "../../domain/Runner.js"
import { BlobStore, inputBlobKey } from "../../ports/BlobStore.js"
import { type StorageError, TierLimitExceeded, ValidationError, WorkflowNotFound } from "../../domain/Errors.js"
import { IdGenerator, isUuid, type WorkflowId } from "../../domain/Ids.js"
import type { JsonObject } from "../../domain/Json.js"
import { MAX_TAGS, normalizeTags, parseTagList } from "../../domain/Tags.js"
import { requireText } from "../../domain/Validation.js"
import { TemplateRepository } from "../../ports/TemplateRepository.js"
import { findPlaceholders, isParamField, placeholderKey, type ResolvedParam, resolveParams, type SuppliedParam } from "../../domain/Placeholders.js"
import { priorityLevel } from "../../domain/Ordering.js"
import { assignTo, Priority, refOf, type Workflow } from "../../domain/Workflow.js"
import { WorkflowRepository } from "../../ports/WorkflowRepository.js"
import {
  asFirstAnswered,
  type CreateWorkflowInput,
  IDEMPOTENCY_WINDOW,
  type RerunWorkflowInput,
  type UploadedFile
} from "./Inputs.js"
import { checkWebhookUrl } from "../../domain/Webhook.js"
import { sourceOf } from "./Definition.js"
import { decodeModels, type ModelFile, mergeModels } from "../../domain/ModelFiles.js"
import { type InputFile, isUrlInput, makeUrlInputs, uploadedBytes, withUrlInputs } from "./UrlInputs.js"

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/
const decodePriority = Schema.decodeUnknownResult(Priority)
const NAME_MAX = 200

export const makeCreateWorkflow = Effect.gen(function*() {
  const repo = yield* WorkflowRepository
  const templates = yield* TemplateRepository
  const blobs = yield* BlobStore
  const policy = yield* TierPolicy
  const scheduler = yield* Scheduler
  const ids = yield* IdGenerator
  const urlInputs = yield* makeUrlInputs

  const findOwned = (user: User, id: string) =>
    (isUuid(id) ? repo.findForUser(user.id, id) : Effect.succeedNone).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.fail(new WorkflowNotFound()), onSome: Effect.succeed }))
    )

  const checkIdempotencyKey = (key: string | undefined) =>
    key === undefined || IDEMPOTENCY_KEY.test(key)
      ? Effect.void
      : Effect.fail(ValidationError.field("Idempotency-Key", "must be 1-255 visible ASCII characters"))

  /** The answer of an earlier request with the same key, if any. */
  const priorRequest = (user: User, key: string | undefined) =>
    Effect.gen(function*() {
      yield* checkIdempotencyKey(key)
      if (key === undefined) return Option.none<Workflow>()
      const since = DateTime.subtractDuration(yield* DateTime.now, IDEMPOTENCY_WINDOW)
      return Option.map(yield* repo.findByIdempotencyKey(user.id, key, since), asFirstAnswered)
    })

  const checkParamFields = (params: ReadonlyArray<SuppliedParam<UploadedFile>>) => {
    const bad = params.find((p) => !isParamField(p.field))
    return bad === undefined
      ? Effect.void
      : Effect.fail(ValidationError.field(bad.field, "is not a parameter field (names start with $ or #)"))
  }

  /** The priority asked for (default normal), within the tier's `max_priority` (403 beyond it). */
  const priorityOf = (user: User, raw: string | undefined) =>
    Effect.gen(function*() {
      if (raw === undefined || raw === "") return "normal" as const
      const decoded = decodePriority(raw)
      if (Result.isFailure(decoded)) return yield* Effect.fail(ValidationError.field("priority", "must be low, normal or high"))
      const max = policy.limitsFor(user.tier).max_priority
      if (priorityLevel(decoded.success) > priorityLevel(max)) {
        return yield* Effect.fail(new TierLimitExceeded({
          limit: "max_priority",
          value: priorityLevel(max),
          message: `Priority limit exceeded: the ${user.tier} tier allows priorities up to ${max}`
        }))
      }
      return decoded.success
    })

  /** Whether a parameter has a file to store under the new workflow: an upload, or an inherited file. */
  const storesFile = (r: ResolvedParam<InputFile>) => r.value._tag === "Upload" || r.placeholder.kind === "file"

  /** Stores a blob until the scope closes, and removes it then unless the scope succeeded. */
  const storeScoped = (key: string, put: Effect.Effect<unknown, ValidationError | StorageError>) =>
    Effect.acquireRelease(Effect.as(put, key), (k, exit) => Exit.isSuccess(exit) ? Effect.void : Effect.ignore(blobs.delete(k)))

  /** What URL inputs may still fetch: the tier's `max_upload_bytes` less the request's uploaded parts. */
  const urlBudget = (user: User, limits: TierLimits, resolved: ReadonlyArray<ResolvedParam<InputFile>>) =>
    Effect.map(Ref.make(limits.max_upload_bytes - uploadedBytes(resolved.flatMap((r) => r.value._tag === "Upload" ? [r.value.file] : []))), (left) => ({
      left,
      tooLarge: `it is larger than the ${user.tier} tier's limit of ${sizeText(limits.max_upload_bytes)} per request ` +
        "(max_upload_bytes, counted together with the request's uploaded files)"
    }))

  /** Stores uploads, URL inputs and inherited files under the new workflow; the `workflow_params` pairs. */
  const storeParams = (user: User, limits: TierLimits, workflowId: string, resolved: ReadonlyArray<ResolvedParam<InputFile>>) =>
    Effect.flatMap(urlBudget(user, limits, resolved), (budget) => Effect.forEach(resolved, (r) =>
      Effect.gen(function*() {
        const key = placeholderKey(r.placeholder)
        if (r.value._tag === "Upload") {
          const file = r.value.file
          if (isUrlInput(file)) return [key, yield* urlInputs.store(workflowId, r.placeholder.name, file.url, budget)] as const
          const blobKey = inputBlobKey(workflowId, r.placeholder.name, file.filename)
          yield* storeScoped(blobKey, blobs.put(blobKey, file.content, file.content_type))
          return [key, blobKey] as const
        }
        if (!storesFile(r)) return [key, r.value.value] as const
        // A rerun inherits a file: the new workflow gets its own copy, since each workflow's
        // inputs are deleted when it finishes.
        const from = r.value.value
        const name = r.placeholder.name
        const blobKey = inputBlobKey(workflowId, name, from.split("/").pop() ?? "file")
        yield* storeScoped(blobKey, Effect.filterOrFail(blobs.copy(from, blobKey), (copied) => copied, () =>
          new ValidationError({
            message: `Parameter validation failed: $${name} must be sent again, ` +
              "the original workflow's upload was deleted when it finished",
            details: [{ field: `$${name}`, message: "the original upload no longer exists; send the file again" }]
          })))
        return [key, blobKey] as const
      })))

  /** The shared tail of create and rerun: parameters, limits, runner, files, the one write. */
  const submit = (
    user: User,
    spec: {
      readonly name: string
      readonly workflow_json: JsonObject
      readonly tags: ReadonlyArray<string>
      readonly params: ReadonlyArray<SuppliedParam<UploadedFile>>
      readonly inherited: Workflow["workflow_params"]
      readonly idempotency_key: string | undefined
      readonly priority: Priority
      readonly webhook_url: string | null
      readonly models: ReadonlyArray<ModelFile>
    }
  ) =>
    Effect.gen(function*() {
      const placeholders = yield* Effect.fromResult(findPlaceholders(spec.workflow_json))
      const resolved = yield* Effect.fromResult(resolveParams(placeholders, withUrlInputs(placeholders, spec.params), spec.inherited))
      const limits = policy.limitsFor(user.tier)
      yield* Effect.fromResult(policy.check(user.tier, "workflow_params", 0, resolved.length))
      const now = yield* DateTime.now
      const dayStart = DateTime.startOf(now, "day")
      if (resolved.some((r) => r.value._tag === "Upload")) {
        // Reject before storing up to 50 MB of files; the write re-checks atomically.
        yield* Effect.fromResult(policy.check(user.tier, "active_workflows", yield* repo.countActive(user.id)))
        yield* Effect.fromResult(policy.check(user.tier, "workflows_per_day", yield* repo.countCreatedSince(user.id, dayStart)))
      }
      // What the runner must have, with the chosen parameter values in place.
      const values = resolved.flatMap((r) => r.value._tag === "Value" ? [[placeholderKey(r.placeholder), r.value.value] as const] : [])
      const runner = yield* scheduler.choose(user, spec.tags, { needs: needsOf(spec.workflow_json, values), models: spec.models })
      const id = (yield* ids.next) as WorkflowId
      const write = (params: Workflow["workflow_params"]) =>
        repo.create(newWorkflow(id, user, spec, runner, params, now), {
          limits: { active_workflows: limits.active_workflows, workflows_per_day: limits.workflows_per_day, day_start: dayStart },
          idempotency_since: DateTime.subtractDuration(now, IDEMPOTENCY_WINDOW)
        }).pipe(Effect.tap(() => Metric.update(workflowsCreated, 1)))
      // Files to store live in a scope that releases them unless the write succeeds; with none
      // (most creates), no scope is opened and closed.
      return yield* (resolved.some(storesFile) ? Effect.scoped(Effect.flatMap(storeParams(user, limits, id, resolved), write)) : write(values)).pipe(Effect.catchTags({
        LimitReached: (e) => Effect.fail(limitExceeded(e.limit, user.tier, limits[e.limit])),
        DuplicateIdempotencyKey: (e) => Effect.succeed(asFirstAnswered(e.existing))
      }))
    })

  const create = (user: User, input: CreateWorkflowInput) =>
    Effect.gen(function*() {
      const prior = yield* priorRequest(user, input.idempotency_key)
      if (Option.isSome(prior)) return prior.value
      const name = yield* Effect.fromResult(requireText("name", input.name, 1, NAME_MAX))
      const source = yield* sourceOf(templates, user, input)
      const workflow_json = source.workflow_json
      const models = yield* Effect.flatMap(decodeModels(input.models), (own) => Effect.fromResult(mergeModels(source.models, own)))
      const tags = yield* Effect.fromResult(
        input.tags === undefined || typeof input.tags === "string" ? parseTagList(input.tags) : normalizeTags(input.tags)
      )
      if (tags.length > MAX_TAGS) return yield* Effect.fail(ValidationError.field("tags", `at most ${MAX_TAGS} tags are allowed`))
      const params = input.params ?? []
      yield* checkParamFields(params)
      const priority = yield* priorityOf(user, input.priority)
      const webhook_url = input.webhook_url === undefined || input.webhook_url === "" ? null : yield* checkWebhookUrl("webhook_url", input.webhook_url)
      return yield* submit(user, { name, workflow_json, tags, params, inherited: [], idempotency_key: input.idempotency_key, priority, webhook_url, models })
    })

  const rerun = (user: User, id: string, input: RerunWorkflowInput) =>
    Effect.gen(function*() {
      yield* checkIdempotencyKey(input.idempotency_key)
      const original = yield* findOwned(user, id)
      const prior = yield* priorRequest(user, input.idempotency_key)
      if (Option.isSome(prior)) return prior.value
      const params = input.params ?? []
      yield* checkParamFields(params)
      return yield* submit(user, {
        name: original.name,
        workflow_json: original.workflow_json,
        tags: original.tags,
        params,
        inherited: original.workflow_params,
        idempotency_key: input.idempotency_key,
        priority: original.priority,
        models: original.models,
        webhook_url: input.webhook_url === undefined || input.webhook_url === ""
          ? original.webhook_url
          : yield* checkWebhookUrl("webhook_url", input.webhook_url)
      })
    })

  return { create, rerun }
})

const newWorkflow = (
  id: WorkflowId,
  user: User,
  spec: {
    readonly name: string
    readonly workflow_json: JsonObject
    readonly tags: ReadonlyArray<string>
    readonly idempotency_key: string | undefined
    readonly priority: Priority
    readonly webhook_url: string | null
    readonly models: ReadonlyArray<ModelFile>
  },
  runner: RunnerTarget,
  params: Workflow["workflow_params"],
  now: DateTime.Utc
): Workflow => ({
  id,
  user_id: user.id,
  name: spec.name,
  status: "accepted",
  tags: spec.tags,
  created_at: now,
  updated_at: now,
  started_at: null,
  completed_at: null,
  ...assignTo(refOf(runner)),
  workflow_json: spec.workflow_json,
  workflow_params: params,
  prompt_id: null,
  queue_number: null,
  error_node: null,
  exception_type: null,
  exception_message: null,
  idempotency_key: spec.idempotency_key ?? null,
  dispatch_attempts: 0,
  transfer_ms: null,
  submitted_at: null,
  webhook_url: spec.webhook_url,
  priority: spec.priority,
  attempts: [],
  models: spec.models
})
