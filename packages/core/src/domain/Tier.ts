/**
 * Subscription tiers and their limits. The defaults are design.md section 5's table; an operator
 * overrides any of them with `WES_TIER_LIMITS` (JSON, partial per tier).
 */
import * as Config from "effect/Config"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as Struct from "effect/Struct"
import { ManagedRunnersForbidden, TierLimitExceeded } from "./Errors.js"
import { NonNegativeInt } from "./Json.js"
import { Priority } from "./Workflow.js"

export const Tier = Schema.Literals(["free", "pro", "plus"]).annotate({
  identifier: "Tier",
  message: "must be free, pro or plus"
})
export type Tier = typeof Tier.Type

/** Kind of a managed runner: `pro` runners serve pro and plus, `plus` runners serve plus only. */
export const RunnerType = Schema.Literals(["pro", "plus"]).annotate({
  identifier: "RunnerType",
  message: "must be pro or plus"
})
export type RunnerType = typeof RunnerType.Type

const Limit = NonNegativeInt

/** The limits of one tier. */
export const TierLimits = Schema.Struct({
  /** Workflows not yet finished (accepted, uploaded, queued, running). */
  active_workflows: Limit,
  /** Workflows created per UTC calendar day. */
  workflows_per_day: Limit,
  templates: Limit,
  /** User-owned runners. */
  runners: Limit,
  /** Parameters (placeholders) per workflow. */
  workflow_params: Limit,
  /** The highest priority a workflow may ask for. */
  max_priority: Priority,
  /** Automatic retries of a workflow that failed with RunnerLost or out of memory, each on another runner. */
  retries: Limit,
  /** Bytes of one create or rerun request's files (a URL input counts its fetched bytes); the contract's 50 MB by default. */
  max_upload_bytes: Limit,
  /** Bytes of one output file taken from a runner; a larger file fails the workflow, naming the limit. */
  max_output_bytes: Limit,
  /** Days a finished workflow's inputs and outputs are kept; then the retention sweeper deletes them (410 after). */
  retention_days: Limit
})
export interface TierLimits extends Schema.Schema.Type<typeof TierLimits> {}

export type TierTable = { readonly [T in Tier]: TierLimits }

const MiB = 1024 * 1024
const GiB = 1024 * MiB

/** The contract's upload limit: 50 MB per request (service-interface.md, "Upload size"). */
export const CONTRACT_UPLOAD_BYTES = 50 * MiB

/** design.md section 5, with the media limits of docs/decisions.md ("Media"). */
export const defaultTierTable: TierTable = {
  free: {
    active_workflows: 5, workflows_per_day: 100, templates: 10, runners: 2, workflow_params: 10, max_priority: "normal", retries: 1,
    max_upload_bytes: CONTRACT_UPLOAD_BYTES, max_output_bytes: 1 * GiB, retention_days: 7
  },
  pro: {
    active_workflows: 50, workflows_per_day: 5_000, templates: 200, runners: 20, workflow_params: 50, max_priority: "high", retries: 1,
    max_upload_bytes: CONTRACT_UPLOAD_BYTES, max_output_bytes: 4 * GiB, retention_days: 30
  },
  plus: {
    active_workflows: 500, workflows_per_day: 50_000, templates: 2_000, runners: 200, workflow_params: 200, max_priority: "high", retries: 1,
    max_upload_bytes: CONTRACT_UPLOAD_BYTES, max_output_bytes: 16 * GiB, retention_days: 90
  }
}

/** Shape of `WES_TIER_LIMITS`: any tier, any subset of its limits. */
const PartialLimits = TierLimits.mapFields(Struct.map(Schema.optionalKey))
export const TierTableOverride = Schema.Struct({
  free: PartialLimits,
  pro: PartialLimits,
  plus: PartialLimits
}).mapFields(Struct.map(Schema.optionalKey))
export type TierTableOverride = typeof TierTableOverride.Type

/** Applies an override to a table. */
export const applyOverride = (table: TierTable, override: TierTableOverride): TierTable => ({
  free: { ...table.free, ...override.free },
  pro: { ...table.pro, ...override.pro },
  plus: { ...table.plus, ...override.plus }
})

/** Managed runner types a tier may use. */
export const managedRunnerTypesFor = (tier: Tier): ReadonlyArray<RunnerType> =>
  tier === "plus" ? ["pro", "plus"] : tier === "pro" ? ["pro"] : []

/** Which count limit a check is about; the names appear in `GET /v1/user`'s `limits`. */
export type LimitName = "active_workflows" | "workflows_per_day" | "templates" | "runners" | "workflow_params"

const describe: { readonly [K in LimitName]: (tier: Tier, value: number) => string } = {
  active_workflows: (t, v) =>
    `Active workflow limit exceeded: the ${t} tier allows ${v} unfinished workflows at a time`,
  workflows_per_day: (t, v) => `Daily workflow limit exceeded: the ${t} tier allows ${v} workflows per day`,
  templates: (t, v) => `Template limit exceeded: the ${t} tier allows ${v} templates`,
  runners: (t, v) => `Runner limit exceeded: the ${t} tier allows ${v} runners`,
  workflow_params: (t, v) =>
    `Workflow parameter limit exceeded: the ${t} tier allows ${v} parameters per workflow`
}

/** The 403 error for `limit` of `tier`, naming the limit and its value. */
export const limitExceeded = (limit: LimitName, tier: Tier, value: number): TierLimitExceeded =>
  new TierLimitExceeded({ limit, value, message: describe[limit](tier, value) })

/** Tier limits in force. */
export class TierPolicy extends Context.Service<TierPolicy, {
  readonly table: TierTable
  readonly limitsFor: (tier: Tier) => TierLimits
  /** Fails when `count` more items would exceed `limit` given `current`. */
  readonly check: (
    tier: Tier,
    limit: LimitName,
    current: number,
    adding?: number
  ) => Result.Result<void, TierLimitExceeded>
  /** Fails for tiers without managed runners. */
  readonly requireManagedAccess: (tier: Tier) => Result.Result<ReadonlyArray<RunnerType>, ManagedRunnersForbidden>
}>()("@wes/core/TierPolicy") {
  /** A policy over `table`. */
  static make(table: TierTable): TierPolicy["Service"] {
    return {
      table,
      limitsFor: (tier) => table[tier],
      check: (tier, limit, current, adding = 1) => {
        const value = table[tier][limit]
        return current + adding > value ? Result.fail(limitExceeded(limit, tier, value)) : Result.void
      },
      requireManagedAccess: (tier) => {
        const types = managedRunnerTypesFor(tier)
        return types.length === 0
          ? Result.fail(new ManagedRunnersForbidden({ message: "Managed runners require the pro or plus tier" }))
          : Result.succeed(types)
      }
    }
  }

  /** The defaults of design.md section 5. */
  static Default: Layer.Layer<TierPolicy> = Layer.succeed(TierPolicy, TierPolicy.make(defaultTierTable))

  /** A policy with an explicit override (for embedders and tests). */
  static layer = (override: TierTableOverride): Layer.Layer<TierPolicy> =>
    Layer.succeed(TierPolicy, TierPolicy.make(applyOverride(defaultTierTable, override)))

  /** Reads `WES_TIER_LIMITS` (JSON); a malformed value fails the layer with a message naming it. */
  static fromConfig: Layer.Layer<TierPolicy, Config.ConfigError> = Layer.effect(
    TierPolicy,
    Effect.map(
      Config.option(Config.schema(Schema.fromJsonString(TierTableOverride), "WES_TIER_LIMITS")),
      (override) => TierPolicy.make(Option.match(override, { onNone: () => defaultTierTable, onSome: (o) => applyOverride(defaultTierTable, o) }))
    )
  )
}
