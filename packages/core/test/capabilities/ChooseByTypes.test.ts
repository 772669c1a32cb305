/**
 * The scheduler with typed parameters: runners that disagree on an input's type each check the
 * value by their own declaration; a workflow goes to a runner that takes its values, and create
 * fails with a 400 naming the parameter, the node and the type only when none does.
 */
import { describe, expect, it } from "@effect/vitest"
import { ManagedRunnerRepository, RunnerLoad, RunnerRepository, type RunnerTarget } from "@wes/core"
import { indexSummary, needsOf } from "../../src/domain/Needs.js"
import { type KnownCapabilities, RunnerCapabilities } from "../../src/usecases/RunnerCapabilities.js"
import { Scheduler } from "../../src/usecases/Scheduler.js"
import { summarize } from "../../src/domain/Summary.js"
import { Fixtures } from "@wes/core/testing"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

const target = (id: string): RunnerTarget => ({ kind: "user", id, name: id, endpoint: "http://127.0.0.1:8188", headers: {}, tags: [], status: "active" })

/** A runner whose `Switch.on` input is declared as `spec`. */
const known = (id: string, spec: unknown): KnownCapabilities => {
  const summary = summarize({ Switch: { input: { required: { on: spec } } }, SaveImage: { input: { required: { images: ["IMAGE"] } } } })
  return { record: { runner_id: id, runner_kind: "user", summary, hash: id, read_at: Fixtures.at(0) }, index: indexSummary(summary) }
}

const scheduler = (runners: ReadonlyArray<readonly [string, KnownCapabilities | undefined]>) =>
  Scheduler.Live.pipe(Layer.provide(Layer.mergeAll(
    Layer.mock(RunnerLoad, { candidates: () => Effect.succeed(runners.map(([id]) => ({ target: target(id), in_flight: 0 }))) }),
    Layer.mock(RunnerCapabilities, {
      lookupAll: (ids) => Effect.succeed(ids.map((id) => Option.fromNullishOr(runners.find(([r]) => r === id)?.[1])))
    }),
    Layer.mock(RunnerRepository, {}),
    Layer.mock(ManagedRunnerRepository, {})
  )))

const graph = { "1": { class_type: "Switch", inputs: { on: "$text(on)" } } }
const choose = (value: string) =>
  Effect.flatMap(Scheduler, (s) => s.choose(Fixtures.user(), [], { needs: needsOf(graph, [["$text(on)", value]]) }))

describe("choosing a runner for typed parameters", () => {
  it.effect("sends a value to the runner whose input takes it when runners disagree on the type", () =>
    Effect.gen(function*() {
      expect((yield* choose("maybe")).id).toBe("as-text")
      // Both take "false" (a boolean on one, text on the other): either may get it.
      expect(["as-boolean", "as-text"]).toContain((yield* choose("false")).id)
    }).pipe(Effect.provide(scheduler([["as-boolean", known("as-boolean", ["BOOLEAN", { default: true }])], ["as-text", known("as-text", ["STRING", {}])]]))))

  it.effect("fails with a 400 naming the parameter, the node and each runner's type when no runner takes the value", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(choose("maybe"))
      expect(error._tag).toBe("ValidationError")
      expect(error.message).toBe(
        'Parameter validation failed: $on "maybe" cannot fill node "1" (Switch.on), which takes a BOOLEAN (true/false, yes/no or 1/0)'
      )
      expect(error._tag === "ValidationError" ? error.details.map((d) => d.message) : []).toEqual([
        '"maybe" cannot fill node "1" (Switch.on), which takes a BOOLEAN (true/false, yes/no or 1/0)',
        '"maybe" cannot fill node "1" (Switch.on), which takes an INT from 0 to 1'
      ])
    }).pipe(Effect.provide(scheduler([["a", known("a", ["BOOLEAN", {}])], ["b", known("b", ["INT", { min: 0, max: 1 }])]]))))

  it.effect("keeps a runner whose capabilities are not known eligible unless the value contradicts the placeholder's default", () =>
    Effect.gen(function*() {
      expect((yield* choose("maybe")).id).toBe("unknown")
      const inferred = { "1": { class_type: "Switch", inputs: { on: "$text(on, false)" } } }
      const error = yield* Effect.flip(Effect.flatMap(Scheduler, (s) => s.choose(Fixtures.user(), [], { needs: needsOf(inferred, [["$text(on)", "maybe"]]) })))
      expect(error.message).toContain("which takes a BOOLEAN")
    }).pipe(Effect.provide(scheduler([["unknown", undefined]]))))
})
