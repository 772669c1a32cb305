/** The scheduling service: which runners a user may use, and which one takes the next workflow. */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { User } from "../accounts/Account.js"
import { NoEligibleRunner, type StorageError } from "../shared/Errors.js"
import { ManagedRunnerRepository } from "../runners/ManagedRunnerRepository.js"
import { managedRunnerTarget, type RunnerTarget, userRunnerTarget } from "../runners/Runner.js"
import { RunnerRepository } from "../runners/RunnerRepository.js"
import { eligibleRunners, pickRunner } from "./Scheduling.js"
import { managedRunnerTypesFor } from "../accounts/Tier.js"
import type { RunnerRef } from "../workflows/Workflow.js"
import { WorkflowRepository } from "../workflows/WorkflowRepository.js"

/** The 400 for a workflow no runner can take. */
export const noEligibleRunner = (tags: ReadonlyArray<string>): NoEligibleRunner =>
  new NoEligibleRunner({
    tags,
    message: tags.length === 0
      ? "No runner available: no active runner is registered for this account"
      : `No runner available with matching tags: no active runner has all of ${tags.join(", ")}`
  })

export class Scheduler extends Context.Tag("@wes/core/Scheduler")<Scheduler, {
  /** Active runners the user may use: their own, plus managed runners their tier allows. */
  readonly candidates: (user: Pick<User, "id" | "tier">) => Effect.Effect<ReadonlyArray<RunnerTarget>, StorageError>
  /**
   * The runner for a workflow with `tags`: eligible, least in flight, ties round robin.
   * `exclude` skips runners already tried.
   */
  readonly choose: (
    user: Pick<User, "id" | "tier">,
    tags: ReadonlyArray<string>,
    exclude?: ReadonlySet<string>
  ) => Effect.Effect<RunnerTarget, NoEligibleRunner | StorageError>
  /** The runner a reference points to, if it still exists. */
  readonly resolve: (ref: RunnerRef) => Effect.Effect<Option.Option<RunnerTarget>, StorageError>
}>() {
  static Live: Layer.Layer<Scheduler, never, RunnerRepository | ManagedRunnerRepository | WorkflowRepository> = Layer
    .effect(
      Scheduler,
      Effect.gen(function*() {
        const runners = yield* RunnerRepository
        const managed = yield* ManagedRunnerRepository
        const workflows = yield* WorkflowRepository
        let cursor = 0
        const candidates = (user: Pick<User, "id" | "tier">) =>
          Effect.gen(function*() {
            const own = yield* runners.listActiveForUser(user.id)
            const types = managedRunnerTypesFor(user.tier)
            const shared = types.length === 0 ? [] : yield* managed.listActive(types)
            return [...own.map(userRunnerTarget), ...shared.map(managedRunnerTarget)]
          })
        return Scheduler.of({
          candidates,
          choose: (user, tags, exclude) =>
            Effect.gen(function*() {
              const all = eligibleRunners(yield* candidates(user), tags)
              const eligible = exclude === undefined ? all : all.filter((r) => !exclude.has(r.id))
              if (eligible.length === 0) return yield* Effect.fail(noEligibleRunner(tags))
              const load = yield* workflows.countInFlight(eligible.map((r) => r.id))
              return pickRunner(eligible, load, cursor++)!
            }),
          resolve: (ref) =>
            ref.kind === "user"
              ? Effect.map(runners.findById(ref.id), Option.map(userRunnerTarget))
              : Effect.map(managed.findById(ref.id), Option.map(managedRunnerTarget))
        })
      })
    )
}
