/**
 * The example against a fake ComfyUI: the node:http service creates a swatch and serves its PNG
 * once the workflow has completed, the promise facade does the same from async/await code, and a
 * host written with Effect 4 composes WES's layers with its own logger, tracer and scope.
 */
import { RunnerService } from "@wes/core"
import { FakeComfyUI, inspectImage } from "@wes/runner-client/testing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Scope from "effect/Scope"
import type * as Tracer from "effect/Tracer"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { generateSwatch } from "../facade.js"
import { type HostLogLine, hostLayer, Swatches } from "../host.js"
import { type Backend, startBackend } from "../server.js"

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

let fake: FakeComfyUI
beforeAll(async () => {
  fake = await FakeComfyUI.start()
})
afterAll(() => fake.close())

describe("the node:http service", () => {
  let backend: Backend
  const logs: Array<string> = []
  beforeAll(async () => {
    backend = await startBackend({ comfyuiUrl: fake.url, log: (line) => logs.push(line) })
  })
  afterAll(() => backend.close())

  it("creates a swatch workflow and serves its PNG once it has completed", async () => {
    const created = await fetch(`${backend.url}/swatches`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ color: "#ff8800", size: 48 })
    })
    expect(created.status).toBe(202)
    const { id, image, status } = await created.json() as { id: string; image: string; status: string }
    expect(status).toBe("accepted")

    const png = await fetch(backend.url + image)
    expect(png.status).toBe(200)
    expect(png.headers.get("content-type")).toBe("image/png")
    const bytes = Buffer.from(await png.arrayBuffer())
    expect(bytes.subarray(0, 8)).toEqual(PNG_SIGNATURE)
    expect(inspectImage(bytes)).toMatchObject({ format: "PNG", width: 48, height: 48, color: 0xff8800 })
    expect(await (await fetch(`${backend.url}/swatches/${id}`)).json()).toEqual({ id, status: "completed", error: null })
    // The route followed the workflow's events to the end.
    expect(logs.filter((l) => l.startsWith(`swatch ${id}: `)).at(-1)).toContain("done")
    // What reached ComfyUI: the parameters substituted into the team's workflow, as the INTs EmptyImage declares.
    const body = fake.submissions.at(-1)?.body as { prompt: Record<string, { inputs: Record<string, unknown> }> }
    expect(body.prompt["1"]!.inputs).toMatchObject({ width: 48, height: 48, color: 0xff8800 })
  })

  it("answers WES's typed errors with HTTP statuses", async () => {
    const bad = await fetch(`${backend.url}/swatches`, { method: "POST", body: JSON.stringify({ color: "orange" }) })
    expect(bad.status).toBe(400)
    const missing = await fetch(`${backend.url}/swatches/${crypto.randomUUID()}`)
    expect(missing.status).toBe(404)
    expect(await missing.json()).toEqual({ error: "Workflow not found" })
  })
})

describe("the promise facade", () => {
  it("runs the same workflow from async/await code", async () => {
    const events: Array<string> = []
    const { file, workflow } = await generateSwatch({ comfyuiUrl: fake.url, color: 0x0080ff, size: 32, onEvent: (e) => events.push(e.type) })
    expect(workflow.status).toBe("completed")
    expect(events[0]).toBe("status")
    expect(events.at(-1)).toBe("done")
    expect(events).toContain("output")
    expect(file.content_type).toBe("image/png")
    expect(inspectImage(Buffer.from(file.bytes))).toMatchObject({ format: "PNG", width: 32, height: 32, color: 0x0080ff })
  })
})

describe("a host application on Effect 4", () => {
  it("runs WES on the host's logger, tracer and scope, and stops it when its scope closes", async () => {
    // A ComfyUI of its own: its connections and requests are this host's alone.
    const comfyui = await FakeComfyUI.start()
    const logs: Array<HostLogLine> = []
    const spans: Array<Tracer.NativeSpan> = []
    // Every fiber started and ended under the host's layers, through Effect's runtime-metrics hook.
    const fibers = { started: 0, ended: 0 }
    const counting: Metric.FiberRuntimeMetricsService = {
      recordFiberStart: () => void fibers.started++,
      recordFiberEnd: () => void fibers.ended++
    }
    const layer = hostLayer({
      comfyuiUrl: comfyui.url,
      telemetry: { log: (line) => logs.push(line), onSpan: (span) => spans.push(span), minimumLogLevel: "Debug" }
    }).pipe(Layer.provide(Layer.succeed(Metric.FiberRuntimeMetrics, counting)))

    const scope = await Effect.runPromise(Scope.make())
    try {
      const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
      const run = <A, E>(effect: Effect.Effect<A, E, Layer.Success<typeof layer>>) => Effect.runPromiseWith(context)(effect)

      const workflow = await run(Effect.flatMap(Swatches, (s) => s.create(0x00ff00, 24)))
      const { bytes } = await run(Effect.flatMap(Swatches, (s) => s.image(workflow.id)))
      expect(inspectImage(Buffer.from(bytes))).toMatchObject({ format: "PNG", width: 24, height: 24, color: 0x00ff00 })

      const wes = spans.find((s) => s.name === "wes")
      expect(wes?.status._tag).toBe("Started")
      const [runner] = (await run(Effect.flatMap(Swatches, (s) => Effect.flatMap(RunnerService, (r) => r.list(s.user, { per_page: 10 }))))).items

      // The host's logger got WES's own lines, the dispatcher's background fiber's included, in the
      // host's "wes" span; the host's tracer holds them as events of that span.
      const driving = logs.find((l) => l.message.startsWith("driving runner"))
      expect(driving).toMatchObject({ level: "Debug", trace_id: wes!.traceId, span_id: wes!.spanId })
      expect(driving!.message).toContain(runner!.id)
      expect(wes!.events.map(([name]) => name)).toContainEqual(expect.stringContaining("driving runner"))
      // The host's own spans are the parents of what WES does for them: its log lines are in them.
      expect(spans.map((s) => s.name)).toEqual(expect.arrayContaining(["swatches.create", "swatches.image"]))
      const image = spans.find((s) => s.name === "swatches.image")!
      expect(logs.filter((l) => l.span_id === image.spanId).at(-1)?.message).toBe(`swatch ${workflow.id}: done`)
      const refused = await run(
        Effect.flatMap(Swatches, (s) =>
          Effect.flatMap(RunnerService, (runners) => runners.create(s.user, { name: "gone", endpoint: "http://127.0.0.1:9" }))).pipe(
            Effect.withSpan("runners.add"),
            Effect.flip
          )
      )
      expect(refused._tag).toBe("RunnerProbeFailed")
      const add = spans.find((s) => s.name === "runners.add")!
      expect(logs.find((l) => l.message.startsWith("runner probe failed"))).toMatchObject({ trace_id: add.traceId, span_id: add.spanId })
      expect(add.events.map(([name]) => name)).toContainEqual(expect.stringContaining("runner probe failed"))

      // A workflow on the runner when the host's scope closes: held, so it is still running.
      comfyui.hold()
      const held = await run(Effect.flatMap(Swatches, (s) => s.create(0x0000ff, 8)))
      await comfyui.whenRunning(held.id)
      expect(fibers.started - fibers.ended).toBeGreaterThan(0)
      expect(comfyui.connectedClients).toHaveLength(1)

      await Effect.runPromise(Scope.close(scope, Exit.void))

      // Every fiber WES started ended with the host's scope; its runner connection is closed.
      expect(fibers.started - fibers.ended).toBe(0)
      expect(wes!.status._tag).toBe("Ended")
      await comfyui.waitUntil(() => comfyui.connectedClients.length === 0, 5_000, "WES's WebSocket closed")
      // No more dispatch: the held prompt finishes on the runner, and nothing comes to follow it
      // up (no history, no output download); with no fiber of WES left, nothing can come later.
      const requests = comfyui.requests.length
      comfyui.release()
      await comfyui.whenFinished(held.id)
      expect(fibers.started - fibers.ended).toBe(0)
      expect(comfyui.requests.slice(requests)).toEqual([])
      expect(comfyui.submissions).toHaveLength(2)
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
      await comfyui.close()
    }
  })
})
