/**
 * When runners' capabilities are read, on the test clock: at registration (a failure is unknown,
 * not an error) and every `refreshInterval` for runners not read meanwhile, which is what notices
 * new nodes on a runner no workflow goes to.
 */
import { describe, expect, it } from "@effect/vitest"
import {
  ManagedRunnerService,
  type NodeReplacements,
  type ObjectInfo,
  PlatformLive,
  RunnerGateway,
  RunnerProbe,
  RunnerRequestFailed,
  RunnerService,
  TierPolicy,
  useCasesLayer,
  WorkflowService
} from "@wes/core"
import { MemoryStoreLive } from "@wes/storage-memory"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/testing/TestClock"
import { COMFYUI_0_3_64, type GatewayCalls, makeTestGateway, newUser, smoke } from "./harness.js"

const node = { input: { required: {} } }

/**
 * The whole core with a gateway whose `/object_info` is `answer` (none: it fails), whose probe
 * reports `calls.comfyui`, and whose `/node_replacements` is `replacements` (none: no such route).
 */
const layerWith = (
  answer: Ref.Ref<Option.Option<ObjectInfo>>,
  reads: Ref.Ref<number>,
  calls: GatewayCalls = { probes: [], cancels: [] },
  replacements: Option.Option<NodeReplacements> = Option.none()
) => {
  const base = makeTestGateway(calls)
  const gateway = Layer.succeed(RunnerGateway, RunnerGateway.of({
    ...base,
    nodeReplacements: () => Effect.succeed(replacements),
    objectInfo: (runner) =>
      Effect.andThen(Ref.update(reads, (n) => n + 1), Effect.flatMap(Ref.get(answer), Option.match({
        onNone: () => Effect.fail(new RunnerRequestFailed({ runner_id: runner.id, status: 500, message: "GET /object_info: 500" })),
        onSome: Effect.succeed
      })))
  }))
  return useCasesLayer({ capabilities: { refreshInterval: "5 minutes" } }).pipe(
    Layer.provideMerge(Layer.mergeAll(MemoryStoreLive, gateway, RunnerProbe.Off, TierPolicy.layer({}), PlatformLive))
  )
}

/**
 * Polls `condition` on the live clock (the TestClock stays put) until it holds; dies after 5
 * seconds naming `what`. A read that found capabilities stores them after hashing them (a
 * promise), which `TestClock.adjust` does not wait for; everything else it runs to the end.
 */
const eventually = <E, R>(what: string, condition: Effect.Effect<boolean, E, R>) =>
  TestClock.withLive(Effect.gen(function*() {
    const deadline = (yield* Clock.currentTimeMillis) + 5_000
    while (!(yield* condition)) {
      if ((yield* Clock.currentTimeMillis) > deadline) return yield* Effect.die(new Error(`timed out after 5 s waiting for ${what}`))
      yield* Effect.sleep("1 millis")
    }
  }))

describe("reading runners' capabilities", () => {
  it.effect("registers a runner whose /object_info fails as unknown, reads it again every refresh interval, then routes by it", () =>
    Effect.gen(function*() {
      const answer = yield* Ref.make(Option.none<ObjectInfo>())
      const reads = yield* Ref.make(0)
      const context = yield* Layer.build(layerWith(answer, reads))
      yield* Effect.gen(function*() {
        const runners = yield* RunnerService
        const workflows = yield* WorkflowService
        const user = yield* newUser("pro")
        const runner = yield* runners.create(user, { name: "r", endpoint: "http://127.0.0.1:8188" })
        expect(runner.capabilities).toBeNull()
        expect(yield* Ref.get(reads)).toBe(1)
        // Unknown: eligible.
        yield* workflows.create(user, { name: "a", workflow_json: smoke() })

        // The runner now answers, without ImageInvert: nothing reads it before the interval is up.
        yield* Ref.set(answer, Option.some({ EmptyImage: node, SaveImage: node }))
        yield* TestClock.adjust("4 minutes")
        expect((yield* runners.get(user, runner.id)).capabilities).toBeNull()
        yield* TestClock.adjust("1 minute")
        yield* eventually("the refresh to store what it read", Effect.map(runners.get(user, runner.id), (r) => r.capabilities?.node_classes === 2))
        expect(yield* Ref.get(reads)).toBe(2)
        const refused = yield* Effect.flip(workflows.create(user, { name: "b", workflow_json: smoke() }))
        expect(refused).toMatchObject({ _tag: "MissingCapabilities", runners: [{ runner_id: runner.id, node_classes: ["ImageInvert"] }] })

        // Read at the last tick: the next one leaves it alone; a failed read after that keeps what was known.
        yield* Ref.set(answer, Option.none())
        yield* TestClock.adjust("5 minutes")
        expect(yield* Ref.get(reads)).toBe(2)
        yield* TestClock.adjust("5 minutes")
        expect(yield* Ref.get(reads)).toBe(3)
        expect((yield* runners.get(user, runner.id)).capabilities?.node_classes).toBe(2)
      }).pipe(Effect.provide(context))
    }))
})

describe("probing runners again", () => {
  it.effect("sees a runner downgraded below 0.3.45 at its next read: it gets no work, says why, and takes work again once upgraded", () =>
    Effect.gen(function*() {
      const calls: GatewayCalls = { probes: [], cancels: [] }
      const answer = yield* Ref.make(Option.none<ObjectInfo>())
      const context = yield* Layer.build(layerWith(answer, yield* Ref.make(0), calls))
      yield* Effect.gen(function*() {
        const runners = yield* RunnerService
        const managed = yield* ManagedRunnerService
        const workflows = yield* WorkflowService
        const user = yield* newUser("pro")
        const runner = yield* runners.create(user, { name: "gpu-1", endpoint: "http://127.0.0.1:8188" })
        const pooled = yield* managed.adminCreate({ name: "pool-1", runner_type: "pro", endpoint: "http://10.0.0.1:8188" })
        expect(runner.comfyui?.version).toBe("0.3.64")

        // Both reinstalled with an old ComfyUI: seen at the next read (the refresh; a reconnection reads too).
        calls.comfyui = { ...COMFYUI_0_3_64, version: "0.3.40" }
        yield* TestClock.adjust("5 minutes")
        const seen = yield* runners.get(user, runner.id)
        expect(seen).toMatchObject({ comfyui: calls.comfyui, warning: expect.stringContaining("gets no work until it is upgraded") })
        expect(seen.updated_at).toEqual(runner.updated_at)
        expect((yield* managed.adminGet(pooled.id)).comfyui?.version).toBe("0.3.40")
        expect(yield* Effect.flip(workflows.create(user, { name: "a", workflow_json: smoke() }))).toMatchObject({
          _tag: "NoEligibleRunner",
          message: "No runner available: runner \"gpu-1\" runs ComfyUI 0.3.40, runner \"pool-1\" runs ComfyUI 0.3.40; WES needs ComfyUI 0.3.45 or later"
        })

        // Upgraded, with the jobs API: seen, and eligible again.
        calls.comfyui = { ...COMFYUI_0_3_64, version: "0.38.1", jobs_api: true }
        yield* TestClock.adjust("5 minutes")
        expect(yield* runners.get(user, runner.id)).toMatchObject({ comfyui: calls.comfyui, warning: null })
        yield* workflows.create(user, { name: "b", workflow_json: smoke() })
      }).pipe(Effect.provide(context))
    }))
})

describe("node replacements", () => {
  const loaded = { EmptyImage: node, ImageInvert: node, SaveImage: node, ImageScaleToMaxDimension: node }
  const deprecated = {
    "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
    "2": { class_type: "ResizeImagesByLongerEdge", inputs: { images: ["1", 0], longer_edge: 4 } },
    "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "r" } }
  }

  it.effect("takes a deprecated class the runner replaces with a loaded one as present; without the replacement it is missing", () =>
    Effect.gen(function*() {
      for (const [replacements, lacks] of [
        [Option.some({ ResizeImagesByLongerEdge: ["ImageScaleToMaxDimension"] }), []],
        // ComfyUI uses the first replacement only, and only when it is loaded.
        [Option.some({ ResizeImagesByLongerEdge: ["NotLoaded", "ImageScaleToMaxDimension"] }), ["ResizeImagesByLongerEdge"]],
        [Option.none(), ["ResizeImagesByLongerEdge"]]
      ] as const) {
        const context = yield* Layer.build(layerWith(yield* Ref.make(Option.some<ObjectInfo>(loaded)), yield* Ref.make(0), undefined, replacements))
        yield* Effect.gen(function*() {
          const user = yield* newUser("pro")
          const runner = yield* (yield* RunnerService).create(user, { name: "r", endpoint: "http://127.0.0.1:8188" })
          const created = yield* Effect.result((yield* WorkflowService).create(user, { name: "old graph", workflow_json: deprecated }))
          if (lacks.length === 0) expect(created._tag).toBe("Success")
          else expect(created).toMatchObject({ failure: { _tag: "MissingCapabilities", runners: [{ runner_id: runner.id, node_classes: lacks }] } })
        }).pipe(Effect.provide(context))
      }
    }))
})
