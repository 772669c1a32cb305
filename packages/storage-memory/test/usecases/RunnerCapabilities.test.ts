/**
 * When runners' capabilities are read, on the test clock: at registration (a failure is unknown,
 * not an error) and every `refreshInterval` for runners not read meanwhile, which is what notices
 * new nodes on a runner no workflow goes to.
 */
import { describe, expect, it } from "@effect/vitest"
import {
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
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import { makeTestGateway, newUser, smoke } from "./harness.js"

const node = { input: { required: {} } }

/** The whole core with a gateway whose `/object_info` is `answer` (none: it fails). */
const layerWith = (answer: Ref.Ref<Option.Option<ObjectInfo>>, reads: Ref.Ref<number>) => {
  const base = makeTestGateway({ probes: [], cancels: [] })
  const gateway = Layer.succeed(RunnerGateway, RunnerGateway.of({
    ...base,
    objectInfo: (runner) =>
      Effect.zipRight(Ref.update(reads, (n) => n + 1), Effect.flatMap(Ref.get(answer), Option.match({
        onNone: () => Effect.fail(new RunnerRequestFailed({ runner_id: runner.id, status: 500, message: "GET /object_info: 500" })),
        onSome: Effect.succeed
      })))
  }))
  return useCasesLayer({ capabilities: { refreshInterval: "5 minutes" } }).pipe(
    Layer.provideMerge(Layer.mergeAll(MemoryStoreLive, gateway, RunnerProbe.Off, TierPolicy.layer({}), PlatformLive))
  )
}

/** Lets the refresh fiber run after the clock moved. */
const settle = Effect.repeatN(Effect.yieldNow(), 50)

describe("reading runners' capabilities", () => {
  it.scoped("registers a runner whose /object_info fails as unknown, reads it again every refresh interval, then routes by it", () =>
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
        yield* settle
        expect((yield* runners.get(user, runner.id)).capabilities).toBeNull()
        yield* TestClock.adjust("1 minute")
        yield* settle
        expect(yield* Ref.get(reads)).toBe(2)
        expect((yield* runners.get(user, runner.id)).capabilities?.node_classes).toBe(2)
        const refused = yield* Effect.flip(workflows.create(user, { name: "b", workflow_json: smoke() }))
        expect(refused).toMatchObject({ _tag: "MissingCapabilities", runners: [{ runner_id: runner.id, node_classes: ["ImageInvert"] }] })

        // Read at the last tick: the next one leaves it alone; a failed read after that keeps what was known.
        yield* Ref.set(answer, Option.none())
        yield* TestClock.adjust("5 minutes")
        yield* settle
        expect(yield* Ref.get(reads)).toBe(2)
        yield* TestClock.adjust("5 minutes")
        yield* settle
        expect(yield* Ref.get(reads)).toBe(3)
        expect((yield* runners.get(user, runner.id)).capabilities?.node_classes).toBe(2)
      }).pipe(Effect.provide(context))
    }))
})
