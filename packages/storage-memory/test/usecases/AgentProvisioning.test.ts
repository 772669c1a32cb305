/**
 * Issue 34, items 3 and 4, through the whole core (use cases, scheduler, dispatcher) over the
 * memory store: a workflow with model files on an agent runner has them placed before its prompt
 * is posted, its follower sees the `provisioning` events in its log before `queued`, and once it
 * completed (its output stored) the agent is asked to delete the run's files. The runner side is
 * an in-process gateway that finishes each prompt at once; the agents a test `RunnerAgents`.
 */
import { it } from "@effect/vitest"
import {
  type ModelFile,
  PlatformLive,
  type PromptHistory,
  type ProvisionProgress,
  type RunFiles,
  RunnerAgents,
  type RunnerEvent,
  RunnerGateway,
  RunnerProbe,
  RunnerRequestFailed,
  RunnerService,
  type SubmitPrompt,
  TierPolicy,
  useCasesLayer,
  type WorkflowEvent,
  WorkflowService
} from "@wes/core"
import { MemoryStoreLive } from "@wes/storage-memory"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { describe, expect } from "vitest"
import { COMFYUI_0_3_64, newUser, smoke } from "./harness.js"

const checkpoint: ModelFile = { url: "https://models.test/sdxl.safetensors", sha256: "a".repeat(64), folder: "checkpoints", filename: "sdxl.safetensors" }

/** A runner that runs each prompt at once (start, then done) with one output file; `posted` in order. */
const instantRunner = (posted: Array<string>) => {
  const hub = Effect.runSync(PubSub.unbounded<RunnerEvent>())
  const histories = new Map<string, PromptHistory>()
  return RunnerGateway.of({
    probe: () => Effect.succeed(COMFYUI_0_3_64),
    nodeReplacements: () => Effect.succeedNone,
    objectInfo: (runner) => Effect.fail(new RunnerRequestFailed({ runner_id: runner.id, status: 404, message: "GET /object_info: 404" })),
    uploadInput: () => Effect.die(new Error("no inputs in this test")),
    submit: (_runner, prompt: SubmitPrompt) =>
      Effect.gen(function*() {
        const id = prompt.prompt_id
        posted.push(id)
        histories.set(id, {
          outcome: "success",
          outputs: [{ node_id: "3", filename: `${id}.png`, subfolder: "", type: "output" }],
          started_at: null,
          completed_at: null,
          error: null
        })
        yield* PubSub.publishAll(hub, [
          { _tag: "ExecutionStart", prompt_id: id, timestamp: null },
          { _tag: "PromptDone", prompt_id: id }
        ]).pipe(Effect.delay("20 millis"), Effect.forkDetach)
        return { prompt_id: id, number: posted.length }
      }),
    queue: () => Effect.succeed({ running: [], pending: [] }),
    history: (_runner, id) => Effect.succeed(Option.fromNullishOr(histories.get(id))),
    status: (_runner, id) =>
      Effect.sync(() => {
        const history = histories.get(id)
        return history === undefined ? { _tag: "Unknown" as const } : { _tag: "Finished" as const, history }
      }),
    cancel: () => Effect.void,
    download: () => Effect.succeed({ content_type: "image/png", content: Stream.make(new Uint8Array([137, 80, 78, 71])) }),
    events: () =>
      Effect.gen(function*() {
        const out = yield* Effect.acquireRelease(Queue.bounded<RunnerEvent>(64), Queue.shutdown)
        const published = yield* PubSub.subscribe(hub)
        yield* Queue.offer(out, { _tag: "Connected" })
        yield* Effect.forkScoped(Effect.forever(Effect.flatMap(PubSub.take(published), (e) => Queue.offer(out, e))))
        return out
      })
  })
}

describe("an agent runner end to end", () => {
  const posted: Array<string> = []
  const provisioned: Array<string> = []
  const cleaned = Effect.runSync(Deferred.make<RunFiles>())
  const gateway = Layer.succeed(RunnerGateway, instantRunner(posted))
  const agents = Layer.succeed(RunnerAgents, RunnerAgents.of({
    connected: () => true,
    status: () => Effect.succeedNone,
    provision: (_runnerId, models, onProgress) =>
      Effect.gen(function*() {
        provisioned.push(...models.map((m) => m.filename))
        const p = (bytes: number): ProvisionProgress => ({ folder: "checkpoints", filename: "sdxl.safetensors", bytes, total: 4 })
        yield* onProgress(p(1))
        yield* onProgress(p(4))
      }),
    cleanup: (_runnerId, files) => Effect.asVoid(Deferred.succeed(cleaned, files))
  }))
  const layer = useCasesLayer({
    dispatcher: { scanInterval: "50 millis", claimInterval: "50 millis", reconcileInterval: "100 millis", idleAfter: "1 second" }
  }).pipe(Layer.provideMerge(Layer.mergeAll(
    MemoryStoreLive,
    gateway,
    RunnerProbe.layer().pipe(Layer.provide(gateway)),
    TierPolicy.layer({}),
    PlatformLive,
    agents
  )))

  it.live("places the models, shows provisioning before queued, posts once, completes, then cleans up", () =>
    Effect.gen(function*() {
      const user = yield* newUser("pro")
      yield* (yield* RunnerService).create(user, { name: "home-gpu", connection: "agent" })
      const workflows = yield* WorkflowService
      const w = yield* workflows.create(user, { name: "w", workflow_json: smoke(), models: [checkpoint] })
      const events: ReadonlyArray<WorkflowEvent> = Array.from(yield* Stream.runCollect(yield* workflows.follow(user, w.id, 0)))
      const log = events.map((e) =>
        e.type === "status" || e.type === "done" ? `${e.type}:${(e.data as { status: string }).status}` : e.type === "provisioning" ? `provisioning:${(e.data as { percent: number }).percent}` : e.type
      )
      const queued = log.indexOf("status:queued")
      expect(log.slice(0, queued + 1)).toEqual(["status:accepted", "status:accepted", "provisioning:25", "provisioning:100", "status:uploaded", "status:queued"])
      expect(log.at(-1)).toBe("done:completed")
      expect([provisioned, posted]).toEqual([["sdxl.safetensors"], [w.id]])
      const files = yield* Deferred.await(cleaned)
      expect(files).toEqual({ prompt_id: w.id, outputs: [{ node_id: "3", filename: `${w.id}.png`, subfolder: "", type: "output" }], inputs: [] })
    }).pipe(Effect.provide(layer)), 20_000)
})
