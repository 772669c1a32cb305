/**
 * Status and cancel through ComfyUI's jobs API where the runner has it (the probe found it:
 * `comfyui.jobs_api`), the three-request path elsewhere; and `/node_replacements`. Against the
 * fake in both kinds: 0.3.64 (no jobs API, the default) and a newer server (`jobsApi: true`).
 */
import { describe, expect, layer } from "@effect/vitest"
import { type PromptStatus, RunnerGateway, type RunnerTarget } from "@wes/core"
import { FakeComfyUI, saveImageWorkflow } from "@wes/runner-client/testing"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { gatewayLayer, runnerFor, uuid } from "./harness.js"

const wait = (p: () => Promise<void>) => Effect.promise(p)

/** The runner as WES knows it once probed: with or without the jobs API. */
const probed = (fake: FakeComfyUI, jobsApi: boolean): RunnerTarget => ({
  ...runnerFor(fake),
  comfyui: { version: jobsApi ? "0.38.1" : "0.3.64", devices: [], jobs_api: jobsApi }
})

/** The requests the fake received from `from` on, as `METHOD path`. */
const requestsSince = (fake: FakeComfyUI, from: number) => fake.requests.slice(from).map((r) => `${r.method} ${r.path}`)

/** A held runner with `running` running and `pending` waiting behind it. */
const twoPrompts = (fake: FakeComfyUI, runner: RunnerTarget) =>
  Effect.gen(function*() {
    const gateway = yield* RunnerGateway
    fake.hold()
    const running = uuid()
    const pending = uuid()
    yield* gateway.submit(runner, { prompt_id: running, prompt: saveImageWorkflow({ prefix: "run" }), client_id: "c", extra_data: {} })
    yield* wait(() => fake.whenRunning(running))
    yield* gateway.submit(runner, { prompt_id: pending, prompt: saveImageWorkflow({ prefix: "pend" }), client_id: "c", extra_data: {} })
    return { running, pending }
  })

layer(gatewayLayer(), { excludeTestServices: true })("RunnerGateway on the jobs API", (it) => {
  it.effect("cancels in one request, POST /api/jobs/{id}/cancel: a pending prompt leaves the queue, a running one is interrupted", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped({ jobsApi: true })
      const gateway = yield* RunnerGateway
      const runner = probed(fake, true)
      const { pending, running } = yield* twoPrompts(fake, runner)
      const before = fake.requests.length
      yield* gateway.cancel(runner, pending)
      expect(requestsSince(fake, before)).toEqual([`POST /api/jobs/${pending}/cancel`])
      expect(fake.state).toMatchObject({ running, pending: [] })
      yield* gateway.cancel(runner, running)
      expect(requestsSince(fake, before + 1)).toEqual([`POST /api/jobs/${running}/cancel`])
      yield* wait(() => fake.whenFinished(running))
      expect(Option.getOrThrow(yield* gateway.history(runner, running)).outcome).toBe("interrupted")
      // Idempotent: an ended or unknown prompt is no error.
      yield* gateway.cancel(runner, running)
      yield* gateway.cancel(runner, uuid())
    }))

  it.effect("asks where a prompt is in one request, GET /api/jobs/{id}: pending, running, finished with its outputs, unknown", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped({ jobsApi: true })
      const gateway = yield* RunnerGateway
      const runner = probed(fake, true)
      const { pending, running } = yield* twoPrompts(fake, runner)
      const before = fake.requests.length
      const unknown = uuid()
      expect(yield* gateway.status(runner, running)).toEqual({ _tag: "Running" })
      expect(yield* gateway.status(runner, pending)).toEqual({ _tag: "Pending", position: null })
      expect(yield* gateway.status(runner, unknown)).toEqual({ _tag: "Unknown" })
      expect(requestsSince(fake, before)).toEqual([`GET /api/jobs/${running}`, `GET /api/jobs/${pending}`, `GET /api/jobs/${unknown}`])
      fake.release()
      yield* wait(() => fake.whenFinished(pending))
      const finished = yield* gateway.status(runner, running)
      expect(finished).toEqual({ _tag: "Finished", history: Option.getOrThrow(yield* gateway.history(runner, running)) })
      expect(finished).toMatchObject({ history: { outcome: "success", outputs: [{ node_id: "3", filename: "run_00001_.png", type: "output" }] } })
    }))

  it.effect("falls back to the three-request path when a runner probed with the jobs API no longer answers it (downgraded)", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const runner = probed(fake, true)
      const { pending, running } = yield* twoPrompts(fake, runner)
      const before = fake.requests.length
      expect(yield* gateway.status(runner, pending)).toEqual({ _tag: "Pending", position: 1 })
      yield* gateway.cancel(runner, running)
      expect(requestsSince(fake, before)).toEqual([
        `GET /api/jobs/${pending}`, "GET /queue",
        `POST /api/jobs/${running}/cancel`, "POST /queue", "GET /queue", "POST /interrupt"
      ])
      yield* wait(() => fake.whenFinished(running))
    }))
})

layer(gatewayLayer(), { excludeTestServices: true })("RunnerGateway without the jobs API (ComfyUI 0.3.64)", (it) => {
  it.effect("cancels with POST /queue (delete), GET /queue and, only for the running prompt, POST /interrupt", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const runner = probed(fake, false)
      const { pending, running } = yield* twoPrompts(fake, runner)
      const before = fake.requests.length
      yield* gateway.cancel(runner, pending)
      yield* gateway.cancel(runner, running)
      expect(requestsSince(fake, before)).toEqual(["POST /queue", "GET /queue", "POST /queue", "GET /queue", "POST /interrupt"])
      yield* wait(() => fake.whenFinished(running))
      expect(fake.state.pending).toEqual([])
    }))

  it.effect("asks where a prompt is with GET /queue, then GET /history/{id} when it is not queued", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const runner = probed(fake, false)
      const { pending, running } = yield* twoPrompts(fake, runner)
      const before = fake.requests.length
      const statuses: Array<PromptStatus> = [yield* gateway.status(runner, running), yield* gateway.status(runner, pending)]
      expect(statuses).toEqual([{ _tag: "Running" }, { _tag: "Pending", position: 1 }])
      const unknown = uuid()
      expect(yield* gateway.status(runner, unknown)).toEqual({ _tag: "Unknown" })
      expect(requestsSince(fake, before)).toEqual(["GET /queue", "GET /queue", "GET /queue", `GET /history/${unknown}`])
      fake.release()
      yield* wait(() => fake.whenFinished(pending))
      expect(yield* gateway.status(runner, pending)).toMatchObject({ _tag: "Finished", history: { outcome: "success" } })
    }))
})

describe("node replacements", () => {
  layer(gatewayLayer(), { excludeTestServices: true })("GET /node_replacements", (it) => {
    it.effect("is none on a runner without the route, and each deprecated class with its replacements in order on one with it", () =>
      Effect.gen(function*() {
        const gateway = yield* RunnerGateway
        const old = yield* FakeComfyUI.scoped()
        expect(yield* gateway.nodeReplacements(runnerFor(old))).toEqual(Option.none())
        const newer = yield* FakeComfyUI.scoped({
          nodeReplacements: [
            { old_node_id: "InvertOld", new_node_id: "ImageInvert", input_mapping: [{ new_id: "image", old_id: "pixels" }] },
            { old_node_id: "InvertOld", new_node_id: "InvertNewer" },
            { old_node_id: "BlurOld", new_node_id: "ImageBlur" }
          ]
        })
        expect(yield* gateway.nodeReplacements(runnerFor(newer))).toEqual(Option.some({ InvertOld: ["ImageInvert", "InvertNewer"], BlurOld: ["ImageBlur"] }))
      }))
  })
})
