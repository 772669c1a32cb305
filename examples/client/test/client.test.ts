/**
 * The client against the real server, composed the way `wes serve` composes it (configuration
 * from WES_* variables, memory store, dispatcher, ComfyUI client), in this process, plus a fake
 * ComfyUI: the client registers it, submits a workflow with a file, follows the events and
 * downloads a PNG.
 */
import { makeClient } from "@wes/api"
import { jsonLoggerLayer, loadConfig, serverLayer } from "@wes/http-node"
import * as FetchHttpClient from "effect/http/FetchHttpClient"
import { FakeComfyUI, inspectImage, solidPng } from "@wes/runner-client/testing"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Stream from "effect/Stream"
import { readFile } from "node:fs/promises"
import { createServer } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runClientPromise } from "../client.js"
import { parseSseBlock, ProgressBar, sseEvents } from "../progress.js"

const ADMIN_TOKEN = "example-client-admin-token-0123456789"
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const probe = createServer()
    probe.once("error", reject)
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      probe.close(() => resolve(port))
    })
  })

/** `wes serve` in this process, configured through the same variables. */
const startWes = async (env: Record<string, string>) => {
  const port = await freePort()
  const config = await Effect.runPromise(loadConfig.pipe(
    Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnvRecord({ ...env, WES_PORT: String(port) }))
  ))
  const logs: Array<string> = []
  const runtime = ManagedRuntime.make(serverLayer(config).pipe(Layer.provide(jsonLoggerLayer((line) => logs.push(line)))))
  await runtime.runPromise(Effect.void)
  return { url: `http://127.0.0.1:${port}`, logs, close: () => runtime.dispose() }
}

/** A user and a token, through the operator API with the same typed client. */
const newToken = (baseUrl: string) =>
  Effect.gen(function*() {
    const admin = yield* makeClient({ baseUrl, token: ADMIN_TOKEN })
    const user = yield* admin.admin.createUser({ payload: { tier: "pro" } })
    return (yield* admin.admin.issueToken({ params: { id: user.id }, payload: { name: "example client" } })).token
  }).pipe(Effect.provide(FetchHttpClient.layer), Effect.runPromise)

describe("examples/client", () => {
  let wes: Awaited<ReturnType<typeof startWes>>
  let comfyui: FakeComfyUI
  beforeAll(async () => {
    comfyui = await FakeComfyUI.start()
    // The fake ComfyUI listens on 127.0.0.1.
    wes = await startWes({ WES_ADMIN_TOKEN: ADMIN_TOKEN, WES_RATE_LIMIT: "off", WES_RUNNER_ALLOW_PRIVATE: "true" })
  })
  afterAll(async () => {
    await wes.close()
    await comfyui.close()
  })

  it("registers a runner, submits a file, follows the events with a progress bar and downloads a PNG", async () => {
    const token = await newToken(wes.url)
    const screen: Array<string> = []
    const result = await runClientPromise({
      baseUrl: wes.url,
      token,
      comfyuiUrl: comfyui.url,
      workflowJson: await readFile(new URL("../workflows/invert-slow.json", import.meta.url), "utf8"),
      params: { $seconds: "0.3" },
      image: { filename: "input.png", bytes: solidPng(64, 48, 0x3366cc) },
      terminal: { isTTY: false, write: (text) => screen.push(text) }
    })

    expect(result.status).toBe("completed")
    const bytes = Buffer.from(result.output.bytes)
    expect(bytes.subarray(0, 8)).toEqual(PNG_SIGNATURE)
    expect(result.output.content_type).toBe("image/png")
    expect(inspectImage(bytes)).toMatchObject({ format: "PNG", width: 64, height: 48, color: 0x3366cc ^ 0xffffff })

    const kinds = result.events.map((e) => e.event)
    expect(kinds[0]).toBe("status")
    expect(kinds.at(-1)).toBe("done")
    expect(kinds).toContain("progress")
    expect(result.events.at(-1)!.data).toMatchObject({ id: result.workflowId, status: "completed" })
    // The bar moved through the FakeSleep steps and ended full.
    const bars = screen.filter((l) => l.startsWith("["))
    expect(bars.length).toBeGreaterThan(3)
    expect(bars.at(-1)).toMatch(/^\[#{30}\] 100% completed/)

    // The file went to ComfyUI and the runner was removed afterwards.
    expect(comfyui.uploads.some((u) => u.name?.endsWith("input.png"))).toBe(true)
    const me = await fetch(`${wes.url}/v1/runner`, { headers: { authorization: `Bearer ${token}` } })
    expect(await me.json()).toMatchObject({ runners: [], total: 0 })
  })
})

describe("server-sent events", () => {
  it("are parsed across chunk boundaries, skipping keep-alive comments", async () => {
    const text = ": keep-alive\n\nid: 1\nevent: status\ndata: {\"status\":\"queued\"}\n\nid: 2\nevent: progress\ndata: {\"value\":1,\"max\":4}\n\nid: 3\nevent: done\ndata: {\"status\":\"completed\"}\n\n"
    const bytes = new TextEncoder().encode(text)
    const chunks = [bytes.subarray(0, 7), bytes.subarray(7, 40), bytes.subarray(40, 41), bytes.subarray(41)]
    const events = await Effect.runPromise(Stream.runCollect(sseEvents(Stream.fromIterable(chunks))))
    expect(Array.from(events)).toEqual([
      { id: "1", event: "status", data: { status: "queued" } },
      { id: "2", event: "progress", data: { value: 1, max: 4 } },
      { id: "3", event: "done", data: { status: "completed" } }
    ])
    expect(parseSseBlock(": keep-alive")).toBeUndefined()
  })

  it("drive the bar: nodes started plus the steps of the current node", () => {
    const lines: Array<string> = []
    const bar = new ProgressBar(4, { isTTY: false, write: (l) => lines.push(l) })
    bar.update({ id: "1", event: "status", data: { status: "running" } })
    bar.update({ id: "2", event: "executing", data: { node: "1" } })
    bar.update({ id: "3", event: "executing", data: { node: "2" } })
    bar.update({ id: "4", event: "progress", data: { node: "2", value: 5, max: 10 } })
    expect(bar.fraction).toBeCloseTo(1.5 / 4)
    bar.update({ id: "5", event: "done", data: { status: "completed" } })
    expect(bar.fraction).toBe(1)
    expect(lines.at(-1)).toBe(`[${"#".repeat(30)}] 100% completed · 0 output(s)\n`)
  })

  it("follow the server's overall percent when the events carry one (cached nodes left out by WES)", () => {
    const lines: Array<string> = []
    const bar = new ProgressBar(4, { isTTY: false, write: (l) => lines.push(l) })
    bar.update({ id: "1", event: "executing", data: { node: "3", percent: 0 } })
    bar.update({ id: "2", event: "progress", data: { node: "3", value: 1, max: 4, percent: 12 } })
    expect(bar.fraction).toBeCloseTo(0.12)
    expect(lines.at(-1)).toBe(`[${"#".repeat(4)}${".".repeat(26)}]  12% accepted · node 3 · 0 output(s)\n`)
    bar.update({ id: "3", event: "executing", data: { node: "4", percent: 50 } })
    expect(bar.fraction).toBeCloseTo(0.5)
  })
})
