/**
 * Issue 34, item 3: the scheduler prefers runners that already hold a workflow's declared model
 * files (all, then most), from `/object_info`'s file lists and from an agent's inventory, unless
 * the holder is much busier (each missing file weighs `MISSING_MODEL_WEIGHT` workflows in flight).
 * An agent runner does not lack a file the workflow declares (it places it itself); a direct one does.
 */
import { describe, expect, it } from "@effect/vitest"
import { ManagedRunnerRepository, MISSING_MODEL_WEIGHT, type ModelFile, RunnerAgents, RunnerLoad, RunnerRepository, type RunnerTarget } from "@wes/core"
import { indexSummary, needsOf } from "../../src/domain/Needs.js"
import { type KnownCapabilities, RunnerCapabilities } from "../../src/usecases/RunnerCapabilities.js"
import { Scheduler } from "../../src/usecases/Scheduler.js"
import { summarize } from "../../src/domain/Summary.js"
import { Fixtures } from "@wes/core/testing"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

const agent = (id: string): RunnerTarget => ({ kind: "user", id, name: id, endpoint: "http://127.0.0.1:8188", headers: {}, tags: [], status: "active", connection: "agent" })
const direct = (id: string): RunnerTarget => ({ ...agent(id), connection: "direct" })

const checkpoint: ModelFile = { url: "https://models.test/sdxl.safetensors", sha256: "a".repeat(64), folder: "checkpoints", filename: "sdxl.safetensors" }
const lora: ModelFile = { url: "https://models.test/detail.safetensors", sha256: "b".repeat(64), folder: "loras", filename: "detail.safetensors" }
const placed = (m: ModelFile) => ({ folder: m.folder, filename: m.filename, sha256: m.sha256, bytes: 1 })

/** A runner whose checkpoint loader lists `files`. */
const listing = (id: string, files: ReadonlyArray<string>): KnownCapabilities => {
  const summary = summarize({ CheckpointLoaderSimple: { input: { required: { ckpt_name: [files] } } } })
  return { record: { runner_id: id, runner_kind: "user", summary, hash: id, read_at: Fixtures.at(0) }, index: indexSummary(summary) }
}

interface Arranged {
  readonly target: RunnerTarget
  readonly inFlight?: number
  readonly capabilities?: KnownCapabilities
  readonly inventory?: ReadonlyArray<ModelFile>
}

const scheduler = (runners: ReadonlyArray<Arranged>, statusReads: Array<string> = []) =>
  Scheduler.Live.pipe(Layer.provide(Layer.mergeAll(
    Layer.mock(RunnerLoad, { candidates: () => Effect.succeed(runners.map((r) => ({ target: r.target, in_flight: r.inFlight ?? 0 }))) }),
    Layer.mock(RunnerCapabilities, {
      lookupAll: (ids) => Effect.succeed(ids.map((id) => Option.fromNullishOr(runners.find((r) => r.target.id === id)?.capabilities)))
    }),
    Layer.mock(RunnerAgents, {
      connected: () => true,
      status: (id) =>
        Effect.sync(() => {
          statusReads.push(id)
          const inventory = runners.find((r) => r.target.id === id)?.inventory
          return inventory === undefined ? Option.none() : Option.some({
            agent_version: "0.1.0",
            gpu: null,
            disk: null,
            models: inventory.map(placed),
            model_budget_bytes: null,
            cleanup: true,
            connected: true,
            reported_at: "2026-11-28T17:00:00.000Z"
          })
        })
    }),
    Layer.mock(RunnerRepository, {}),
    Layer.mock(ManagedRunnerRepository, {})
  )))

const graph = { "1": { class_type: "CheckpointLoaderSimple", inputs: { ckpt_name: "sdxl.safetensors" } } }
const choose = (models: ReadonlyArray<ModelFile>) =>
  Effect.flatMap(Scheduler, (s) => s.choose(Fixtures.user(), [], { needs: needsOf(graph, []), models }))

describe("choosing a runner for a workflow's model files", () => {
  it.effect("prefers the agent runner whose inventory holds every file, however often it is asked", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 4; i++) expect((yield* choose([checkpoint, lora])).id).toBe("holds-all")
    }).pipe(Effect.provide(scheduler([
      { target: agent("holds-none"), capabilities: listing("holds-none", []) },
      { target: agent("holds-all"), capabilities: listing("holds-all", []), inventory: [checkpoint, lora] },
      { target: agent("holds-one"), capabilities: listing("holds-one", []), inventory: [lora] }
    ]))))

  it.effect("then the one that holds most, counting files its /object_info lists", () =>
    Effect.gen(function*() {
      for (let i = 0; i < 4; i++) expect((yield* choose([checkpoint, lora])).id).toBe("lists-checkpoint")
    }).pipe(Effect.provide(scheduler([
      { target: agent("holds-none"), capabilities: listing("holds-none", ["other.safetensors"]) },
      { target: agent("lists-checkpoint"), capabilities: listing("lists-checkpoint", ["sdxl.safetensors"]) }
    ]))))

  it.effect("still spreads work once the holder is much busier than a runner that would download", () =>
    Effect.gen(function*() {
      expect((yield* choose([checkpoint])).id).toBe("idle")
    }).pipe(Effect.provide(scheduler([
      { target: agent("busy-holder"), inFlight: MISSING_MODEL_WEIGHT + 1, capabilities: listing("busy-holder", []), inventory: [checkpoint] },
      { target: agent("idle"), capabilities: listing("idle", []) }
    ]))))

  it.effect("counts a declared file an agent runner lacks as one it will place; a direct runner lacking it is not eligible", () =>
    Effect.gen(function*() {
      expect((yield* choose([checkpoint])).id).toBe("agent")
      // Without the declaration, the agent runner lacks the checkpoint like any runner.
      const undeclared = yield* Effect.flip(choose([]))
      expect(undeclared._tag).toBe("MissingCapabilities")
    }).pipe(Effect.provide(scheduler([
      { target: direct("direct"), capabilities: listing("direct", ["other.safetensors"]) },
      { target: agent("agent"), capabilities: listing("agent", ["other.safetensors"]) }
    ]))))

  it.effect("reads no agent's status for a workflow without model files", () => {
    const reads: Array<string> = []
    return Effect.gen(function*() {
      yield* choose([])
      expect(reads).toEqual([])
    }).pipe(Effect.provide(scheduler([
      { target: agent("a"), capabilities: listing("a", ["sdxl.safetensors"]) },
      { target: agent("b"), capabilities: listing("b", ["sdxl.safetensors"]) }
    ], reads)))
  })
})
