/** `wes serve`'s configuration: runners' capabilities (WES_CAPABILITY_REFRESH), lost runners (WES_RUNNER_LOST_AFTER), webhooks (WES_WEBHOOK_*) and the PostgreSQL store (WES_DB_*). */
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"
import { loadConfig } from "../src/Config.js"

const load = (env: Record<string, string>) =>
  Effect.runPromise(Effect.result(Effect.provideService(loadConfig, ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord(env))))

describe("WES_CAPABILITY_REFRESH", () => {
  it("defaults to 5 minutes, takes a duration, and refuses less than 10 seconds naming the variable", async () => {
    const byDefault = await load({})
    expect(Result.isSuccess(byDefault) && Duration.toMillis(byDefault.success.capabilityRefresh)).toBe(300_000)
    const set = await load({ WES_CAPABILITY_REFRESH: "30 seconds" })
    expect(Result.isSuccess(set) && Duration.toMillis(set.success.capabilityRefresh)).toBe(30_000)
    const tooShort = await load({ WES_CAPABILITY_REFRESH: "1 second" })
    expect(Result.isFailure(tooShort)).toBe(true)
    expect(String(Result.isFailure(tooShort) ? tooShort.failure : "")).toContain("WES_CAPABILITY_REFRESH must be at least 10 seconds")
  })
})

describe("WES_RUNNER_LOST_AFTER", () => {
  it("defaults to 10 minutes, takes a duration, and refuses less than 1 second naming the variable", async () => {
    const lostAfter = (r: Awaited<ReturnType<typeof load>>) => (Result.isSuccess(r) ? Duration.toMillis(r.success.runnerLostAfter) : "error")
    expect(lostAfter(await load({}))).toBe(600_000)
    expect(lostAfter(await load({ WES_RUNNER_LOST_AFTER: "90 seconds" }))).toBe(90_000)
    const tooShort = await load({ WES_RUNNER_LOST_AFTER: "500 millis" })
    expect(String(Result.isFailure(tooShort) ? tooShort.failure : "")).toContain("WES_RUNNER_LOST_AFTER must be at least 1 second")
    const wrong = await load({ WES_RUNNER_LOST_AFTER: "soon" })
    expect(String(Result.isFailure(wrong) ? wrong.failure : "")).toContain("WES_RUNNER_LOST_AFTER")
  })
})

describe("webhook settings", () => {
  it("private webhook URLs are refused by default and allowed in dev mode or with WES_WEBHOOK_ALLOW_PRIVATE=true", async () => {
    const denied = (r: Awaited<ReturnType<typeof load>>) => (Result.isSuccess(r) ? r.success.webhookDenyPrivate : "error")
    expect(denied(await load({}))).toBe(true)
    expect(denied(await load({ WES_DEV: "true" }))).toBe(false)
    expect(denied(await load({ WES_WEBHOOK_ALLOW_PRIVATE: "true" }))).toBe(false)
    expect(denied(await load({ WES_DEV: "true", WES_WEBHOOK_ALLOW_PRIVATE: "false" }))).toBe(true)
  })

  it("timeout 10 s and first retry delay 5 s by default; out-of-range values are refused naming the variable", async () => {
    const byDefault = await load({})
    expect(Result.isSuccess(byDefault) && [Duration.toMillis(byDefault.success.webhookTimeout), Duration.toMillis(byDefault.success.webhookRetryBase)])
      .toEqual([10_000, 5_000])
    const set = await load({ WES_WEBHOOK_TIMEOUT: "2 seconds", WES_WEBHOOK_RETRY_BASE_MS: "100" })
    expect(Result.isSuccess(set) && [Duration.toMillis(set.success.webhookTimeout), Duration.toMillis(set.success.webhookRetryBase)]).toEqual([2_000, 100])
    const base = await load({ WES_WEBHOOK_RETRY_BASE_MS: "5" })
    expect(String(Result.isFailure(base) ? base.failure : "")).toContain("WES_WEBHOOK_RETRY_BASE_MS must be from 10 to 3600000")
    const timeout = await load({ WES_WEBHOOK_TIMEOUT: "2 minutes" })
    expect(String(Result.isFailure(timeout) ? timeout.failure : "")).toContain("WES_WEBHOOK_TIMEOUT must be from 100 milliseconds to 60 seconds")
  })
})

describe("WES_DB_PREPARED_STATEMENTS", () => {
  it("is on by default, off with false, and anything else is refused naming the variable", async () => {
    const prepared = (r: Awaited<ReturnType<typeof load>>) => (Result.isSuccess(r) ? r.success.dbPreparedStatements : "error")
    expect(prepared(await load({}))).toBe(true)
    expect(prepared(await load({ WES_DB_PREPARED_STATEMENTS: "false" }))).toBe(false)
    const wrong = await load({ WES_DB_PREPARED_STATEMENTS: "sometimes" })
    expect(String(Result.isFailure(wrong) ? wrong.failure : "")).toContain("WES_DB_PREPARED_STATEMENTS")
  })
})
