/** `wes serve`'s configuration of runners' capabilities (WES_CAPABILITY_REFRESH). */
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { loadConfig } from "../src/Config.js"

const load = (env: Record<string, string>) =>
  Effect.runPromise(Effect.either(Effect.withConfigProvider(loadConfig, ConfigProvider.fromMap(new Map(Object.entries(env))))))

describe("WES_CAPABILITY_REFRESH", () => {
  it("defaults to 5 minutes, takes a duration, and refuses less than 10 seconds naming the variable", async () => {
    const byDefault = await load({})
    expect(byDefault._tag === "Right" && Duration.toMillis(byDefault.right.capabilityRefresh)).toBe(300_000)
    const set = await load({ WES_CAPABILITY_REFRESH: "30 seconds" })
    expect(set._tag === "Right" && Duration.toMillis(set.right.capabilityRefresh)).toBe(30_000)
    const tooShort = await load({ WES_CAPABILITY_REFRESH: "1 second" })
    expect(tooShort._tag).toBe("Left")
    expect(String(tooShort._tag === "Left" ? tooShort.left : "")).toContain("WES_CAPABILITY_REFRESH must be at least 10 seconds")
  })
})
