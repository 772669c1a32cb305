/**
 * The use cases of @wes/core over the in-memory store (core cannot depend on a store itself).
 * `TestGateway` plays the runner side and dies on any call a test did not arrange.
 */
import {
  AccountService,
  PlatformLive,
  type RunnerComfyUI,
  RunnerGateway,
  RunnerProbe,
  RunnerService,
  RunnerRequestFailed,
  RunnerUnreachable,
  TierPolicy,
  type TierTableOverride,
  type User,
  useCasesLayer
} from "@wes/core"
import { MemoryStoreLive } from "@wes/storage-memory"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"

/** Calls the test gateway received, and the ComfyUI its probe reports (a test may change it). */
export interface GatewayCalls {
  readonly probes: Array<string>
  readonly cancels: Array<{ readonly runner: string; readonly prompt: string }>
  comfyui?: RunnerComfyUI
}

/** What the test gateway's probe reports by default: ComfyUI 0.3.64 on a CPU, without the jobs API. */
export const COMFYUI_0_3_64: RunnerComfyUI = {
  version: "0.3.64",
  devices: [{ name: "cpu", type: "cpu", index: null, vram_total: 17179869184 }],
  jobs_api: false
}

const unexpected = (method: string) => Effect.die(new Error(`unexpected RunnerGateway.${method} call`))

/** A gateway whose probe answers unless the endpoint contains "unreachable", and which records cancels. */
export const makeTestGateway = (calls: GatewayCalls) =>
  RunnerGateway.of({
    probe: (runner) =>
      Effect.sync(() => calls.probes.push(runner.endpoint)).pipe(
        Effect.andThen(
          runner.endpoint.includes("unreachable")
            ? Effect.fail(new RunnerUnreachable({ runner_id: runner.id, message: "connect ECONNREFUSED 127.0.0.1:1" }))
            : Effect.sync(() => calls.comfyui ?? COMFYUI_0_3_64)
        )
      ),
    // Before newer ComfyUI: no such route.
    nodeReplacements: () => Effect.succeedNone,
    cancel: (runner, prompt) => Effect.sync(() => void calls.cancels.push({ runner: runner.id, prompt })),
    // A runner without capabilities to read: they stay unknown (the runner stays eligible).
    objectInfo: (runner) => Effect.fail(new RunnerRequestFailed({ runner_id: runner.id, status: 404, message: "GET /object_info: 404" })),
    uploadInput: () => unexpected("uploadInput"),
    submit: () => unexpected("submit"),
    queue: () => unexpected("queue"),
    history: () => unexpected("history"),
    status: () => unexpected("status"),
    download: () => unexpected("download"),
    events: () => unexpected("events")
  })

/** The whole core over a fresh memory store; `calls` sees what reached the runner side. */
export const makeTestLayer = (options: { readonly tiers?: TierTableOverride; readonly probe?: boolean } = {}) => {
  const calls: GatewayCalls = { probes: [], cancels: [] }
  const gateway = Layer.succeed(RunnerGateway, makeTestGateway(calls))
  const probe = options.probe === false ? RunnerProbe.Off : RunnerProbe.layer().pipe(Layer.provide(gateway))
  const layer = useCasesLayer().pipe(
    Layer.provideMerge(Layer.mergeAll(MemoryStoreLive, gateway, probe, TierPolicy.layer(options.tiers ?? {}), PlatformLive))
  )
  return { calls, layer }
}

/** A new user of `tier`. */
export const newUser = (tier: User["tier"] = "free") =>
  Effect.flatMap(AccountService, (a) => a.createUser({ tier }))

/** A runner of `user` (probe answered by the test gateway). */
export const newRunner = (user: User, tags: ReadonlyArray<string> = [], name = "runner") =>
  Effect.flatMap(RunnerService, (s) => s.create(user, { name, endpoint: "http://127.0.0.1:8188", tags }))

/** The smoke workflow of comfyui-protocol.md section 10, with optional extra inputs on node 1. */
export const smoke = (inputs: Record<string, unknown> = {}) => ({
  "1": { class_type: "EmptyImage", inputs: { width: 64, height: 64, batch_size: 1, color: 255, ...inputs } },
  "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
  "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "smoke/run" } }
})

/** Bytes as a one-chunk stream (a file part of a request). */
export const fileOf = (filename: string, text: string) => ({
  filename,
  content_type: "image/png",
  content: Stream.make(new TextEncoder().encode(text))
})

/** The details of a validation error (fails the test for any other error). */
export const detailsOf = (e: { readonly _tag: string }): ReadonlyArray<{ readonly field: string; readonly message: string }> => {
  if (e._tag !== "ValidationError" || !("details" in e)) throw new Error(`expected a ValidationError, got ${e._tag}`)
  return e.details as ReadonlyArray<{ readonly field: string; readonly message: string }>
}

/** The error of each effect, as a widened list (for loops over differently typed operations). */
export const errorsOf = (effects: ReadonlyArray<Effect.Effect<unknown, { readonly _tag: string }>>) =>
  Effect.forEach(effects, (e) => Effect.flip(e))
