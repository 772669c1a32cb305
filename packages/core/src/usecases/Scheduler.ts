/** The scheduling service: which runner takes a new workflow, and what a runner reference points to now. */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { User } from "../domain/Account.js"
import { describeMissing, lacksNothing, lacksOnlyParams, type Missing, missingOn, type Needs } from "../domain/Needs.js"
import { type InputTypeIndex, parameterTypeError } from "../domain/TypedParams.js"
import { RunnerCapabilities } from "./RunnerCapabilities.js"
import { managedRunnerTypesFor } from "../domain/Tier.js"
import { ManagedRunnerRepository } from "../ports/ManagedRunnerRepository.js"
import { MIN_COMFYUI_VERSION, shownVersion, supportedComfyUI } from "../domain/ComfyUIVersion.js"
import { managedRunnerTarget, type RunnerTarget, userRunnerTarget } from "../domain/Runner.js"
import { RunnerRepository } from "../ports/RunnerRepository.js"
import { MissingCapabilities, NoEligibleRunner, type RunnerLack, type StorageError, type ValidationError } from "../domain/Errors.js"
import { tagsMatch } from "../domain/Tags.js"
import type { RunnerRef } from "../domain/Workflow.js"
import { RunnerLoad } from "../ports/RunnerLoad.js"
import { eligibleRunners, pickRunner } from "../domain/Scheduling.js"
import type { ModelFile } from "../domain/ModelFiles.js"
import { declaresFile, type HeldModel, missingModelCount, weighedLoads } from "../domain/ModelPreference.js"
import { RunnerAgents } from "../ports/RunnerAgents.js"

/** How many runners a message names before it counts the rest. */
const NAMED_RUNNERS = 10

/**
 * The 400 for a workflow no runner can take; `outdated`, the active runners with its tags that
 * were left out for their ComfyUI version (found below the minimum since they were registered).
 */
export const noEligibleRunner = (tags: ReadonlyArray<string>, outdated: ReadonlyArray<RunnerTarget> = []): NoEligibleRunner =>
  new NoEligibleRunner({
    tags,
    message: outdated.length > 0
      ? `No runner available: ${outdated.slice(0, NAMED_RUNNERS).map((r) => `runner ${JSON.stringify(r.name)} runs ComfyUI ${shownVersion(r.comfyui?.version ?? "")}`).join(", ")}` +
        `${outdated.length > NAMED_RUNNERS ? ` and ${outdated.length - NAMED_RUNNERS} more` : ""}; WES needs ComfyUI ${MIN_COMFYUI_VERSION} or later`
      : tags.length === 0
      ? "No runner available: no active runner is registered for this account"
      : `No runner available with matching tags: no active runner has all of ${tags.join(", ")}`
  })

/** The 400 for a workflow whose tags some runners carry, none of which has what it needs. */
export const missingCapabilities = (unsorted: ReadonlyArray<readonly [RunnerTarget, Missing]>): MissingCapabilities => {
  // By name (then id), so the message reads the same however the store listed the runners.
  const lacking = [...unsorted].sort(([a], [b]) => a.name.localeCompare(b.name) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  const runners: Array<RunnerLack> = lacking.map(([r, m]) => ({
    runner_id: r.id,
    runner_name: r.name,
    node_classes: m.node_classes,
    model_files: m.model_files.map((f) => `${f.file} (${f.node_class}.${f.input})`)
  }))
  const described = lacking.map(([, m]) => describeMissing(m))
  const message = described.every((d) => d === described[0])
    ? `No runner has what the workflow needs: ${lacking.length === 1 ? `runner ${JSON.stringify(lacking[0]![0].name)} lacks` : "every eligible runner lacks"} ${described[0]}`
    : "No runner has what the workflow needs: " +
      lacking.slice(0, NAMED_RUNNERS).map(([r], i) => `runner ${JSON.stringify(r.name)} lacks ${described[i]}`).join("; ") +
      (lacking.length > NAMED_RUNNERS ? `; and ${lacking.length - NAMED_RUNNERS} more runners lack some of it` : "")
  return new MissingCapabilities({ message, runners })
}

/** Options of a choice: runners to skip (already tried), and what the workflow needs. */
export interface ChooseOptions {
  readonly exclude?: ReadonlyArray<RunnerRef["id"]> | undefined
  /**
   * A runner whose capabilities are known must have all of it, and take its parameter values;
   * unknown ones stay eligible unless a value does not convert to its placeholder's inferred type.
   */
  readonly needs?: Needs | undefined
  /**
   * The model files it declares: an agent runner places them itself (so lacking one is not
   * lacking), and runners that already hold them are preferred (ModelPreference.ts).
   */
  readonly models?: ReadonlyArray<ModelFile> | undefined
}

export class Scheduler extends Context.Service<Scheduler, {
  /**
   * The runner for a workflow with `tags`: eligible (and, with `needs`, not known to lack any
   * of it), least in flight, ties round robin. `exclude` skips runners already tried. When the
   * only runners with every node and model do not take a parameter's value: ValidationError.
   */
  readonly choose: (
    user: Pick<User, "id" | "tier">,
    tags: ReadonlyArray<string>,
    options?: ChooseOptions
  ) => Effect.Effect<RunnerTarget, NoEligibleRunner | MissingCapabilities | ValidationError | StorageError>
  /**
   * The widget types of every runner a workflow with `tags` may go to (undefined: not known), for
   * describing a workflow's parameters before it is created.
   */
  readonly inputTypes: (
    user: Pick<User, "id" | "tier">,
    tags: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<InputTypeIndex | undefined>, StorageError>
  /** The runner a reference points to, if it still exists. */
  readonly resolve: (ref: RunnerRef) => Effect.Effect<Option.Option<RunnerTarget>, StorageError>
}>()("@wes/core/Scheduler") {
  static Live: Layer.Layer<
    Scheduler,
    never,
    RunnerLoad | RunnerRepository | ManagedRunnerRepository | RunnerCapabilities
  > = Layer.effect(
    Scheduler,
    Effect.gen(function*() {
      const load = yield* RunnerLoad
      const runners = yield* RunnerRepository
      const managed = yield* ManagedRunnerRepository
      const capabilities = yield* RunnerCapabilities
      const agents = yield* Effect.serviceOption(RunnerAgents)
      let cursor = 0
      /**
       * The runners of `eligible` that are not known to lack anything of `needs`; an agent runner
       * does not lack the files `models` declares (it places them before posting).
       */
      const capable = (eligible: ReadonlyArray<RunnerTarget>, needs: Needs, models: ReadonlyArray<ModelFile>) =>
        Effect.gen(function*() {
          const known = yield* capabilities.lookupAll(eligible.map((r) => r.id))
          const declared = declaresFile(models)
          const placed: Needs = models.length === 0 ? needs : { ...needs, model_files: needs.model_files.filter((f) => !declared(f.file)) }
          const needsOn = (r: RunnerTarget) => (r.connection === "agent" ? placed : needs)
          const checked = eligible.map((r, i) => [r, missingOn(Option.getOrUndefined(known[i]!)?.index, needsOn(r))] as const)
          const able = checked.filter(([, m]) => lacksNothing(m)).map(([r]) => r)
          if (able.length > 0) return able
          const typeOnly = checked.filter(([, m]) => lacksOnlyParams(m)).sort(([a], [b]) => a.name.localeCompare(b.name))
          if (typeOnly.length > 0) return yield* Effect.fail(parameterTypeError(typeOnly.flatMap(([, m]) => m.params)))
          return yield* Effect.fail(missingCapabilities(checked))
        })
      /** An agent's reported inventory (none: no agent service, not an agent runner, or never reported). */
      const inventoryOf = (r: RunnerTarget): Effect.Effect<ReadonlyArray<HeldModel>> =>
        Option.isNone(agents) || r.connection !== "agent"
          ? Effect.succeed([])
          : Effect.map(agents.value.status(r.id), (s) => Option.isSome(s) ? s.value.models : [])
      /** How many of `models` each runner lacks (only asked for workflows that declare models). */
      const missingModels = (eligible: ReadonlyArray<RunnerTarget>, models: ReadonlyArray<ModelFile>) =>
        Effect.gen(function*() {
          const known = yield* capabilities.lookupAll(eligible.map((r) => r.id))
          const inventories = yield* Effect.forEach(eligible, inventoryOf, { concurrency: Math.min(8, eligible.length) })
          return new Map(eligible.map((r, i) => [r.id as string, missingModelCount(models, Option.getOrUndefined(known[i]!)?.index, inventories[i]!)]))
        })
      return Scheduler.of({
        choose: (user, tags, options = {}) =>
          Effect.gen(function*() {
            const candidates = yield* load.candidates(user.id, managedRunnerTypesFor(user.tier))
            const excluded = new Set<string>(options.exclude ?? [])
            const tagged = eligibleRunners(candidates.map((c) => c.target), tags).filter((r) => !excluded.has(r.id))
            if (tagged.length === 0) {
              const outdated = candidates.map((c) => c.target)
                .filter((r) => r.status === "active" && !excluded.has(r.id) && !supportedComfyUI(r.comfyui) && tagsMatch(r.tags, tags))
              return yield* Effect.fail(noEligibleRunner(tags, outdated))
            }
            const models = options.models ?? []
            const eligible = options.needs === undefined ? tagged : yield* capable(tagged, options.needs, models)
            const inFlight = new Map(candidates.map((c) => [c.target.id, c.in_flight]))
            // Runners that hold its model files first (no extra read for a workflow without any).
            const loads = models.length === 0 || eligible.length < 2 ? inFlight : weighedLoads(inFlight, yield* missingModels(eligible, models))
            return pickRunner(eligible, loads, cursor++)!
          }),
        inputTypes: (user, tags) =>
          Effect.gen(function*() {
            const candidates = yield* load.candidates(user.id, managedRunnerTypesFor(user.tier))
            const tagged = eligibleRunners(candidates.map((c) => c.target), tags)
            const known = yield* capabilities.lookupAll(tagged.map((r) => r.id))
            return known.map((k) => Option.getOrUndefined(k)?.index.types)
          }),
        resolve: (ref) =>
          ref.kind === "user"
            ? Effect.map(runners.findById(ref.id), Option.map(userRunnerTarget))
            : Effect.map(managed.findById(ref.id), Option.map(managedRunnerTarget))
      })
    })
  )
}
