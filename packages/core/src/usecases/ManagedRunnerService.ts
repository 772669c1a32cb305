/** Use cases of managed runners: what users of paid tiers see, and what the operator manages. */
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { User } from "../domain/Account.js"
import {
  type Conflict,
  ManagedRunnerNotFound,
  type ManagedRunnersForbidden,
  type RunnerProbeFailed,
  type StorageError,
  type ValidationError
} from "../domain/Errors.js"
import { IdGenerator, isUuid, type ManagedRunnerId } from "../domain/Ids.js"
import { ManagedRunnerRepository } from "../ports/ManagedRunnerRepository.js"
import { pageOf, type PageInput, type Paged } from "../domain/Pagination.js"
import {
  CreateManagedRunnerRequest,
  type ManagedRunner,
  type ManagedRunnerAdminView,
  managedRunnerTarget,
  type ManagedRunnerView,
  runnerViewFields,
  toManagedRunnerView,
  UpdateManagedRunnerRequest
} from "../domain/Runner.js"
import { RunnerCapabilities } from "./RunnerCapabilities.js"
import { editRunner } from "./RunnerEdit.js"
import { RunnerProbe } from "../ports/RunnerProbe.js"
import { HISTORY_LENGTH, type ListRunnersInput, runnerBusy, statusFilter } from "./RunnerService.js"
import { normalizeTags } from "../domain/Tags.js"
import { TierPolicy } from "../domain/Tier.js"
import { decodeRequest } from "../domain/Validation.js"
import type { WorkflowSummary } from "../domain/Workflow.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"

export class ManagedRunnerService extends Context.Service<ManagedRunnerService, {
  /** Active managed runners the caller's tier may use (403 for free). */
  readonly list: (
    user: User,
    page: PageInput
  ) => Effect.Effect<Paged<ManagedRunnerView>, ManagedRunnersForbidden | ValidationError | StorageError>
  /** The caller's workflows on a managed runner, newest first, at most 10. */
  readonly history: (
    user: User,
    id: string
  ) => Effect.Effect<ReadonlyArray<WorkflowSummary>, ManagedRunnersForbidden | ManagedRunnerNotFound | StorageError>
  readonly adminCreate: (input: unknown) => Effect.Effect<ManagedRunnerAdminView, ValidationError | RunnerProbeFailed | StorageError>
  readonly adminGet: (id: string) => Effect.Effect<ManagedRunnerAdminView, ManagedRunnerNotFound | StorageError>
  readonly adminList: (input: ListRunnersInput) => Effect.Effect<Paged<ManagedRunnerAdminView>, ValidationError | StorageError>
  readonly adminUpdate: (
    id: string,
    input: unknown
  ) => Effect.Effect<ManagedRunnerAdminView, ValidationError | ManagedRunnerNotFound | RunnerProbeFailed | StorageError>
  readonly adminDelete: (id: string) => Effect.Effect<void, ManagedRunnerNotFound | Conflict | StorageError>
}>()("@wes/core/ManagedRunnerService") {
  static Live: Layer.Layer<
    ManagedRunnerService,
    never,
    ManagedRunnerRepository | WorkflowRepository | TierPolicy | RunnerProbe | IdGenerator | RunnerCapabilities
  > = Layer.effect(
    ManagedRunnerService,
    Effect.gen(function*() {
      const repo = yield* ManagedRunnerRepository
      const workflows = yield* WorkflowRepository
      const policy = yield* TierPolicy
      const probe = yield* RunnerProbe
      const ids = yield* IdGenerator
      const capabilities = yield* RunnerCapabilities
      const decodeCreate = decodeRequest(CreateManagedRunnerRequest)
      const decodeUpdate = decodeRequest(UpdateManagedRunnerRequest)

      const find = (id: string) =>
        (isUuid(id) ? repo.findById(id) : Effect.succeedNone).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(new ManagedRunnerNotFound()), onSome: Effect.succeed }))
        )
      const withCapabilities = (r: ManagedRunner): Effect.Effect<ManagedRunnerAdminView, StorageError> =>
        Effect.map(capabilities.view(r.id), (view) => ({ ...r, ...runnerViewFields(r, view) }))
      /** A runner not probed before it was stored (`WES_RUNNER_PROBE=off`) as read again: the capability read probed it. */
      const probedSince = (r: ManagedRunner) => r.comfyui !== null ? Effect.succeed(r) : Effect.map(repo.findById(r.id), Option.getOrElse(() => r))

      return ManagedRunnerService.of({
        list: (user, page) =>
          Effect.gen(function*() {
            const types = yield* Effect.fromResult(policy.requireManagedAccess(user.tier))
            const p = yield* pageOf(page)
            const result = yield* repo.list({ ...p, types, status: "active" })
            return { items: result.items.map(toManagedRunnerView), total: result.total }
          }),
        history: (user, id) =>
          Effect.gen(function*() {
            const types = yield* Effect.fromResult(policy.requireManagedAccess(user.tier))
            const runner = yield* find(id)
            if (!types.includes(runner.runner_type)) return yield* Effect.fail(new ManagedRunnerNotFound())
            return yield* workflows.history(user.id, { kind: "managed", id: runner.id }, HISTORY_LENGTH)
          }),
        adminCreate: (input) =>
          Effect.gen(function*() {
            const req = yield* decodeCreate(input)
            const tags = yield* Effect.fromResult(normalizeTags(req.tags ?? []))
            const now = yield* DateTime.now
            const runner: ManagedRunner = {
              id: (yield* ids.next) as ManagedRunnerId,
              name: req.name,
              runner_type: req.runner_type,
              status: req.status ?? "active",
              endpoint: req.endpoint,
              headers: req.headers ?? {},
              tags,
              comfyui: null,
              created_at: now,
              updated_at: now
            }
            const comfyui = yield* probe.check(managedRunnerTarget(runner))
            const inserted = yield* repo.insert({ ...runner, comfyui })
            yield* capabilities.read(managedRunnerTarget(inserted))
            return yield* withCapabilities(yield* probedSince(inserted))
          }),
        adminGet: (id) => Effect.flatMap(find(id), withCapabilities),
        adminList: (input) =>
          Effect.gen(function*() {
            const page = yield* pageOf(input)
            const status = yield* Effect.fromResult(statusFilter(input.status))
            const result = yield* repo.list({ ...page, status })
            return { items: yield* Effect.forEach(result.items, withCapabilities, { concurrency: 8 }), total: result.total }
          }),
        adminUpdate: (id, input) =>
          Effect.gen(function*() {
            const req = yield* decodeUpdate(input)
            const { changes, moved } = yield* editRunner(req, find(id), (r: ManagedRunner) => probe.check(managedRunnerTarget(r)))
            const updated = yield* repo.update(id, changes)
            if (moved) yield* capabilities.read(managedRunnerTarget(updated), { forgetOnFailure: true })
            return yield* withCapabilities(moved ? yield* probedSince(updated) : updated)
          }),
        adminDelete: (id) =>
          Effect.gen(function*() {
            yield* find(id)
            const busy = (yield* workflows.countInFlight([id])).get(id) ?? 0
            if (busy > 0) return yield* Effect.fail(runnerBusy(busy))
            if (!(yield* repo.delete(id))) return yield* Effect.fail(new ManagedRunnerNotFound())
            yield* capabilities.forget(id)
          })
      })
    })
  )
}
