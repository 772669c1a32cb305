/** Use cases of user-owned runners. */
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { User } from "../domain/Account.js"
import {
  Conflict,
  RunnerNotFound,
  type RunnerProbeFailed,
  type StorageError,
  type TierLimitExceeded,
  ValidationError
} from "../domain/Errors.js"
import { IdGenerator, isUuid, type RunnerId } from "../domain/Ids.js"
import { pageOf, type PageInput, type Paged } from "../domain/Pagination.js"
import { AgentMinFreeDisk, claimBlockedReason } from "../domain/AgentHealth.js"
import { agentView, type RunnerAgentView } from "../domain/AgentView.js"
import { RunnerAgents } from "../ports/RunnerAgents.js"
import { RunnerCapabilities } from "./RunnerCapabilities.js"
import { editRunner } from "./RunnerEdit.js"
import { decodeCreateRunner } from "./RunnerEndpointRequired.js"
import { createWithinLimit } from "./WithinLimit.js"
import {
  AGENT_ENDPOINT,
  CreateRunnerRequest,
  type Runner,
  RunnerStatus,
  type RunnerView,
  runnerViewFields,
  UpdateRunnerRequest,
  userRunnerTarget
} from "../domain/Runner.js"
import { RunnerProbe } from "../ports/RunnerProbe.js"
import { RunnerRepository } from "../ports/RunnerRepository.js"
import { normalizeTags } from "../domain/Tags.js"
import { TierPolicy } from "../domain/Tier.js"
import { decodeRequest } from "../domain/Validation.js"
import type { WorkflowSummary } from "../domain/Workflow.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"

/** Both history operations return at most this many workflows. */
export const HISTORY_LENGTH = 10

export interface ListRunnersInput extends PageInput {
  readonly status?: string | undefined
}

const decodeStatus = Schema.decodeUnknownResult(RunnerStatus)

/** Validates an optional `status` filter. */
export const statusFilter = (status: string | undefined): Result.Result<RunnerStatus | undefined, ValidationError> => {
  if (status === undefined || status === "") return Result.succeed(undefined)
  return Result.mapError(decodeStatus(status), () => ValidationError.field("status", "must be active or disabled"))
}

/** The 409 for deleting a runner that still has work. */
export const runnerBusy = (count: number): Conflict =>
  new Conflict({
    message: `Runner has ${count} unfinished workflow${count === 1 ? "" : "s"}; ` +
      "disable it and wait for them to finish (or cancel them) before deleting it"
  })

export class RunnerService extends Context.Service<RunnerService, {
  readonly create: (
    user: User,
    input: unknown
  ) => Effect.Effect<RunnerView, ValidationError | TierLimitExceeded | RunnerProbeFailed | StorageError>
  readonly get: (user: User, id: string) => Effect.Effect<RunnerView, RunnerNotFound | StorageError>
  readonly list: (user: User, input: ListRunnersInput) => Effect.Effect<Paged<RunnerView>, ValidationError | StorageError>
  /** Omitted fields keep their values; tags are replaced, not merged. */
  readonly update: (
    user: User,
    id: string,
    input: unknown
  ) => Effect.Effect<RunnerView, ValidationError | RunnerNotFound | RunnerProbeFailed | StorageError>
  /** Deletes a runner without unfinished workflows (409 otherwise). */
  readonly delete: (user: User, id: string) => Effect.Effect<void, RunnerNotFound | Conflict | StorageError>
  /** The caller's workflows on the runner, newest first, at most 10. */
  readonly history: (user: User, id: string) => Effect.Effect<ReadonlyArray<WorkflowSummary>, RunnerNotFound | StorageError>
}>()("@wes/core/RunnerService") {
  static Live: Layer.Layer<
    RunnerService,
    never,
    RunnerRepository | WorkflowRepository | TierPolicy | RunnerProbe | IdGenerator | RunnerCapabilities
  > = Layer.effect(
    RunnerService,
    Effect.gen(function*() {
      const repo = yield* RunnerRepository
      const workflows = yield* WorkflowRepository
      const policy = yield* TierPolicy
      const probe = yield* RunnerProbe
      const ids = yield* IdGenerator
      const capabilities = yield* RunnerCapabilities
      // Optional: without it (direct runners only) an agent runner's agent is never connected.
      const agents = yield* Effect.serviceOption(RunnerAgents)
      const minFreeDiskBytes = yield* AgentMinFreeDisk
      const decodeCreate = decodeCreateRunner(decodeRequest(CreateRunnerRequest))
      const decodeUpdate = decodeRequest(UpdateRunnerRequest)

      const find = (user: User, id: string) =>
        (isUuid(id) ? repo.findForUser(user.id, id) : Effect.succeedNone).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(new RunnerNotFound()), onSome: Effect.succeed }))
        )
      /** The health its agent last reported, and whether it takes work; null for a direct runner. */
      const agentOf = (r: Runner): Effect.Effect<RunnerAgentView | null> => {
        if (r.connection !== "agent") return Effect.succeed(null)
        const status = Option.isSome(agents) ? agents.value.status(r.id) : Effect.succeedNone
        return Effect.map(status, (s) => agentView(s, claimBlockedReason(s, { minFreeDiskBytes })))
      }
      const withCapabilities = (r: Runner): Effect.Effect<RunnerView, StorageError> =>
        Effect.zipWith(capabilities.view(r.id), agentOf(r), (view, agent) => ({ ...r, ...runnerViewFields(r, view), agent }), { concurrent: true })
      const get = (user: User, id: string) => Effect.flatMap(find(user, id), withCapabilities)
      /** A runner not probed before it was stored (`WES_RUNNER_PROBE=off`) as read again: the capability read probed it. */
      const probedSince = (r: Runner) => r.comfyui !== null ? Effect.succeed(r) : Effect.map(repo.findById(r.id), Option.getOrElse(() => r))

      return RunnerService.of({
        create: (user, input) =>
          Effect.gen(function*() {
            const req = yield* decodeCreate(input)
            const connection = req.connection ?? "direct"
            const tags = yield* Effect.fromResult(normalizeTags(req.tags ?? []))
            const inserted = yield* createWithinLimit(policy, user.tier, "runners", repo.count(user.id), (limit) =>
              Effect.gen(function*() {
                const now = yield* DateTime.now
                const runner: Runner = {
                  id: (yield* ids.next) as RunnerId,
                  user_id: user.id,
                  name: req.name,
                  status: "active",
                  endpoint: req.endpoint ?? AGENT_ENDPOINT,
                  connection,
                  tags,
                  headers: req.headers ?? {},
                  comfyui: null,
                  created_at: now,
                  updated_at: now
                }
                // An agent runner is probed when its agent connects, through it: its endpoint never is.
                const comfyui = connection === "agent" ? null : yield* probe.check(userRunnerTarget(runner))
                return yield* repo.insert({ ...runner, comfyui }, limit)
              }))
            if (connection === "agent") return yield* withCapabilities(inserted)
            // Unknown (null) when the read fails: the runner is registered all the same.
            yield* capabilities.read(userRunnerTarget(inserted))
            return yield* withCapabilities(yield* probedSince(inserted))
          }),
        get,
        list: (user, input) =>
          Effect.gen(function*() {
            const page = yield* pageOf(input)
            const status = yield* Effect.fromResult(statusFilter(input.status))
            const result = yield* repo.list(user.id, { ...page, status })
            return { items: yield* Effect.forEach(result.items, withCapabilities, { concurrency: 8 }), total: result.total }
          }),
        update: (user, id, input) =>
          Effect.gen(function*() {
            const req = yield* decodeUpdate(input)
            let stored: Runner | undefined
            const current = Effect.tap(find(user, id), (r) => Effect.sync(() => { stored = r }))
            // An agent runner's endpoint is never connected to: changing it (or its headers) probes nothing.
            const probeMoved = (r: Runner) => r.connection === "agent" ? Effect.succeed(stored?.comfyui ?? null) : probe.check(userRunnerTarget(r))
            const { changes, moved } = yield* editRunner(req, current, probeMoved)
            const updated = yield* repo.update(user.id, id, changes)
            const reread = moved && updated.connection === "direct"
            // A new endpoint may be another ComfyUI: what the old one offered no longer counts.
            if (reread) yield* capabilities.read(userRunnerTarget(updated), { forgetOnFailure: true })
            return yield* withCapabilities(reread ? yield* probedSince(updated) : updated)
          }),
        delete: (user, id) =>
          Effect.gen(function*() {
            yield* find(user, id)
            const busy = (yield* workflows.countInFlight([id])).get(id) ?? 0
            if (busy > 0) return yield* Effect.fail(runnerBusy(busy))
            const deleted = yield* repo.delete(user.id, id)
            if (!deleted) return yield* Effect.fail(new RunnerNotFound())
            yield* capabilities.forget(id)
          }),
        history: (user, id) =>
          Effect.flatMap(find(user, id), (r) => workflows.history(user.id, { kind: "user", id: r.id }, HISTORY_LENGTH))
      })
    })
  )
}
