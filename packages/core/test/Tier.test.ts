import { TierPolicy } from "@wes/core"
import { defaultTierTable } from "../src/domain/Tier.js"
import { it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Layer from "effect/Layer"
import { describe, expect } from "vitest"

const policy = TierPolicy.make(defaultTierTable)

describe("tier policy", () => {
  it("has the default table of the design", () => {
    expect(defaultTierTable.free).toEqual({
      active_workflows: 5,
      workflows_per_day: 100,
      templates: 10,
      runners: 2,
      workflow_params: 10,
      max_priority: "normal",
      retries: 1,
      max_upload_bytes: 50 * 1024 * 1024,
      max_output_bytes: 1024 * 1024 * 1024,
      retention_days: 7
    })
    // The contract's upload limit for every tier; retention grows with the tier.
    expect([defaultTierTable.pro.max_upload_bytes, defaultTierTable.plus.max_upload_bytes]).toEqual([50 * 1024 * 1024, 50 * 1024 * 1024])
    expect([defaultTierTable.pro.retention_days, defaultTierTable.plus.retention_days]).toEqual([30, 90])
    expect(defaultTierTable.pro.max_priority).toBe("high")
    expect(defaultTierTable.pro.workflows_per_day).toBe(5_000)
    expect(defaultTierTable.plus.workflow_params).toBe(200)
  })

  it("allows reaching a limit exactly and refuses one past it, naming the limit and its value", () => {
    expect(Result.isSuccess(policy.check("free", "templates", 9))).toBe(true)
    const past = policy.check("free", "templates", 10)
    expect(Result.isFailure(past) && past.failure).toMatchObject({
      _tag: "TierLimitExceeded",
      limit: "templates",
      value: 10,
      message: "Template limit exceeded: the free tier allows 10 templates"
    })
    expect(Result.isSuccess(policy.check("free", "workflow_params", 0, 10))).toBe(true)
    const params = policy.check("free", "workflow_params", 0, 11)
    expect(Result.isFailure(params) && params.failure.message).toBe(
      "Workflow parameter limit exceeded: the free tier allows 10 parameters per workflow"
    )
  })

  it("names every limit in its message", () => {
    for (const limit of ["active_workflows", "workflows_per_day", "templates", "runners", "workflow_params"] as const) {
      const r = policy.check("pro", limit, defaultTierTable.pro[limit])
      expect(Result.isFailure(r) && r.failure.message).toContain(String(defaultTierTable.pro[limit]))
    }
  })

  it("gives managed runners to pro and plus only", () => {
    expect(Result.isFailure(policy.requireManagedAccess("free"))).toBe(true)
    expect(policy.requireManagedAccess("pro")).toEqual(Result.succeed(["pro"]))
    expect(policy.requireManagedAccess("plus")).toEqual(Result.succeed(["pro", "plus"]))
  })

  const withEnv = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnvRecord(env))

  it.effect("takes overrides from WES_TIER_LIMITS, keeping the rest", () =>
    Effect.gen(function*() {
      const p = yield* TierPolicy
      expect(p.limitsFor("free")).toEqual({ ...defaultTierTable.free, templates: 3 })
      expect(p.limitsFor("plus")).toEqual({ ...defaultTierTable.plus, runners: 1000 })
    }).pipe(Effect.provide(TierPolicy.fromConfig.pipe(Layer.provide(withEnv({ WES_TIER_LIMITS: '{"free":{"templates":3},"plus":{"runners":1000}}' }))))))

  it.effect("refuses a malformed WES_TIER_LIMITS", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Layer.build(TierPolicy.fromConfig.pipe(Layer.provide(withEnv({ WES_TIER_LIMITS: '{"free":{"templates":-1}}' })))).pipe(Effect.scoped))
      expect(String(error)).toContain("WES_TIER_LIMITS")
    }))
})
