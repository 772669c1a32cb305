/** `wes serve`'s configuration: runners' capabilities (WES_CAPABILITY_REFRESH), lost runners (WES_RUNNER_LOST_AFTER), webhooks (WES_WEBHOOK_*), the PostgreSQL store (WES_DB_*), blob stores (WES_BLOB_STORE, WES_S3_PATH_STYLE, WES_BLOB_REDIRECT) and retention (WES_*_RETENTION*). */
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"
import { loadConfig } from "../src/Config.js"
import { blobStoreKind } from "../src/Retention.js"

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

describe("URL input settings (WES_INPUT_URL_*)", () => {
  it("https only and no private addresses by default (both allowed in dev mode or by their switch); timeouts 30 s and 10 min", async () => {
    const of = (r: Awaited<ReturnType<typeof load>>) =>
      Result.isSuccess(r)
        ? [r.success.inputUrlAllowPrivate, r.success.inputUrlAllowHttp, Duration.toMillis(r.success.inputUrlTimeout), Duration.toMillis(r.success.inputUrlMaxTime)]
        : String(r.failure)
    expect(of(await load({}))).toEqual([false, false, 30_000, 600_000])
    expect(of(await load({ WES_DEV: "true" }))).toEqual([true, true, 30_000, 600_000])
    expect(of(await load({ WES_DEV: "true", WES_INPUT_URL_ALLOW_PRIVATE: "false", WES_INPUT_URL_ALLOW_HTTP: "false" }))).toEqual([false, false, 30_000, 600_000])
    expect(of(await load({ WES_INPUT_URL_ALLOW_PRIVATE: "true", WES_INPUT_URL_TIMEOUT: "5 seconds", WES_INPUT_URL_MAX_TIME: "2 minutes" })))
      .toEqual([true, false, 5_000, 120_000])
    expect(of(await load({ WES_INPUT_URL_TIMEOUT: "20 minutes" }))).toContain("WES_INPUT_URL_TIMEOUT must be from 100 milliseconds to 10 minutes")
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

describe("retention settings (WES_RETENTION_INTERVAL, WES_EVENTS_RETENTION, WES_DELIVERIES_RETENTION)", () => {
  it("sweeps every 5 minutes, prunes events after 7 days and deliveries after 30 by default; off turns the sweeper off; bad values are refused naming the variable", async () => {
    const read = (r: Awaited<ReturnType<typeof load>>) =>
      Result.isSuccess(r)
        ? [Option.map(r.success.retentionInterval, Duration.toMillis), Duration.toMillis(r.success.eventsRetention), Duration.toMillis(r.success.deliveriesRetention)]
        : String(r.failure)
    const day = 86_400_000
    expect(read(await load({}))).toEqual([Option.some(300_000), 7 * day, 30 * day])
    expect(read(await load({ WES_RETENTION_INTERVAL: "30 seconds", WES_EVENTS_RETENTION: "1 day", WES_DELIVERIES_RETENTION: "90 days" })))
      .toEqual([Option.some(30_000), day, 90 * day])
    expect(read(await load({ WES_RETENTION_INTERVAL: "off" }))).toEqual([Option.none(), 7 * day, 30 * day])
    expect(read(await load({ WES_RETENTION_INTERVAL: "10 millis" }))).toContain("WES_RETENTION_INTERVAL must be off or a duration of at least 1 second")
    expect(read(await load({ WES_EVENTS_RETENTION: "1 second" }))).toContain("WES_EVENTS_RETENTION must be at least 1 minute")
  })
})

describe("blob store settings (WES_BLOB_STORE, WES_S3_PATH_STYLE, WES_BLOB_REDIRECT)", () => {
  const blobs = (r: Awaited<ReturnType<typeof load>>) =>
    Result.isSuccess(r) ? [r.success.blobStore, r.success.s3PathStyle, r.success.blobRedirect] : String(r.failure)

  it("none by default; an s3:// URL; path-style on when an endpoint is set unless WES_S3_PATH_STYLE says otherwise", async () => {
    expect(blobs(await load({}))).toEqual([Option.none(), false, false])
    expect(blobs(await load({ WES_BLOB_STORE: "s3://media/wes", WES_BLOB_REDIRECT: "true" }))).toEqual([Option.some("s3://media/wes"), false, true])
    expect(blobs(await load({ WES_BLOB_STORE: "s3://media", AWS_ENDPOINT_URL_S3: "http://minio:9000" }))).toEqual([Option.some("s3://media"), true, false])
    expect(blobs(await load({ WES_BLOB_STORE: "s3://media", AWS_ENDPOINT_URL: "http://minio:9000", WES_S3_PATH_STYLE: "false" }))).toEqual([Option.some("s3://media"), false, false])
  })

  it("refuses another scheme, and WES_BLOB_STORE with WES_BLOB_DIR, naming the variable", async () => {
    expect(blobs(await load({ WES_BLOB_STORE: "/var/lib/wes" }))).toContain("WES_BLOB_STORE must be s3://bucket/prefix")
    expect(blobs(await load({ WES_BLOB_STORE: "s3://media", WES_BLOB_DIR: "/var/lib/wes" }))).toContain("WES_BLOB_STORE and WES_BLOB_DIR are both set")
  })

  it("labels the retention metrics with the store the blobs are in", async () => {
    const kind = async (env: Record<string, string>) => {
      const r = await load(env)
      return Result.isSuccess(r) ? blobStoreKind(r.success) : String(r.failure)
    }
    expect(await kind({})).toBe("memory")
    expect(await kind({ WES_BLOB_DIR: "/var/lib/wes" })).toBe("fs")
    expect(await kind({ WES_BLOB_STORE: "s3://media/wes" })).toBe("s3")
  })
})

describe("WES_AGENT_MIN_FREE_DISK", () => {
  it("defaults to 5 GB, takes a size in GB, MB or bytes, and refuses anything else naming the variable", async () => {
    const minFree = (r: Awaited<ReturnType<typeof load>>) => (Result.isSuccess(r) ? r.success.agentMinFreeDisk : String(r.failure))
    expect(minFree(await load({}))).toBe(5 * 1024 ** 3)
    expect(minFree(await load({ WES_AGENT_MIN_FREE_DISK: "500MB" }))).toBe(500 * 1024 ** 2)
    expect(minFree(await load({ WES_AGENT_MIN_FREE_DISK: "1.5 gb" }))).toBe(1.5 * 1024 ** 3)
    expect(minFree(await load({ WES_AGENT_MIN_FREE_DISK: "0" }))).toBe(0)
    expect(minFree(await load({ WES_AGENT_MIN_FREE_DISK: "lots" }))).toContain("WES_AGENT_MIN_FREE_DISK must be a size such as 5GB")
  })
})
