/** The scheduling service: which runner takes a new workflow, and what a runner reference points to now. */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { User } from "../accounts/Account.js"
import { managedRunnerTypesFor } from "../accounts/Tier.js"
import { ManagedRunnerRepository } from "../runners/ManagedRunnerRepository.js"
import { managedRunnerTarget, type RunnerTarget, userRunnerTarget } from "../runners/Runner.js"
import { RunnerRepository } from "../runners/RunnerRepository.js"
import { NoEligibleRunner, type StorageError } from "../shared/Errors.js"
import type { RunnerRef } from "../workflows/Workflow.js"
import { RunnerLoad } from "./RunnerLoad.js"
import { eligibleRunners, pickRunner } from "./Scheduling.js"

/** The 400 for a workflow no runner can take. */
export const noEligibleRunner = (tags: ReadonlyArray<string>): NoEligibleRunner =>
  new NoEligibleRunner({
    tags,
    message: tags.length === 0
      ? "No runner available: no active runner is registered for this account"
      : `No runner available with matching tags: no active runner has all of ${tags.join(", ")}`
  })

export class Scheduler extends Context.Tag("@wes/core/Scheduler")<Scheduler, {
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
  static Live: Layer.Layer<Scheduler, never, RunnerLoad | RunnerRepository | ManagedRunnerRepository> = Layer.effect(
    Scheduler,
    Effect.gen(function*() {
      const load = yield* RunnerLoad
      const runners = yield* RunnerRepository
      const managed = yield* ManagedRunnerRepository
      let cursor = 0
      return Scheduler.of({
        choose: (user, tags, exclude) =>
          Effect.gen(function*() {
            const candidates = yield* load.candidates(user.id, managedRunnerTypesFor(user.tier))
            const eligible = eligibleRunners(candidates.map((c) => c.target), tags).filter((r) => exclude?.has(r.id) !== true)
            if (eligible.length === 0) return yield* Effect.fail(noEligibleRunner(tags))
            const inFlight = new Map(candidates.map((c) => [c.target.id, c.in_flight]))
            return pickRunner(eligible, inFlight, cursor++)!
          }),
        resolve: (ref) =>
          ref.kind === "user"
            ? Effect.map(runners.findById(ref.id), Option.map(userRunnerTarget))
            : Effect.map(managed.findById(ref.id), Option.map(managedRunnerTarget))
      })
    })
  )
}
