/**
 * The scheduler's read of runners' capabilities (`lookupAll`): answers in the order asked, what
 * the store holds or unknown, and asks the store only for runners not cached or expired. The
 * store is a map whose reads are counted; every other service fails if called.
 */
import { describe, expect, it } from "@effect/vitest"
import { CapabilityRepository, ManagedRunnerRepository, RunnerGateway, RunnerRepository, type StoredCapabilities } from "@wes/core"
import { CryptoWeb } from "../../src/domain/Crypto.js"
import { RunnerCapabilities } from "../../src/usecases/RunnerCapabilities.js"
import { Fixtures } from "@wes/core/testing"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/testing/TestClock"

const record = (runnerId: string, nodeClass: string): StoredCapabilities => ({
  runner_id: runnerId,
  runner_kind: "user",
  summary: { node_classes: [nodeClass], model_inputs: [], file_lists: [] },
  hash: `hash-${runnerId}`,
  read_at: Fixtures.at(0)
})

const ids = ["runner-1", "runner-2", "runner-3", "runner-4"] as const
const stored = new Map<string, StoredCapabilities>([[ids[0], record(ids[0], "A")], [ids[2], record(ids[2], "C")], [ids[3], record(ids[3], "D")]])

/** The capabilities over `stored`, the store's reads appended to `reads`. */
const layer = (reads: Array<string>) =>
  RunnerCapabilities.layer({ cacheTtl: "30 seconds" }).pipe(
    Layer.provide(Layer.mergeAll(
      Layer.mock(CapabilityRepository, {
        get: (runnerId) => Effect.sync(() => {
          reads.push(runnerId)
          return Option.fromNullishOr(stored.get(runnerId))
        })
      }),
      Layer.mock(RunnerGateway, {}),
      Layer.mock(RunnerRepository, {}),
      Layer.mock(ManagedRunnerRepository, {}),
      CryptoWeb
    ))
  )

/** What `lookupAll` answered, as the node class each runner is known to have (null: unknown). */
const classes = (known: ReadonlyArray<Option.Option<{ readonly record: StoredCapabilities }>>) =>
  known.map(Option.match({ onNone: () => null, onSome: (k) => k.record.summary.node_classes[0] }))

describe("looking up runners' capabilities", () => {
  it.effect("answers in the order asked, reads the store only for runners not cached, and again once they expire", () => {
    const reads: Array<string> = []
    return Effect.gen(function*() {
      const capabilities = yield* RunnerCapabilities
      expect(classes(yield* capabilities.lookupAll([ids[2]]))).toEqual(["C"])
      expect(reads).toEqual([ids[2]])

      // runner-3 cached, the others not: each of those read once, the answer in the order asked.
      reads.length = 0
      expect(classes(yield* capabilities.lookupAll([ids[3], ids[2], ids[1], ids[0]]))).toEqual(["D", "C", null, "A"])
      expect([...reads].sort()).toEqual([ids[0], ids[1], ids[3]])

      // All cached (unknown included): no read.
      reads.length = 0
      expect(classes(yield* capabilities.lookupAll([ids[1], ids[0], ids[3], ids[2]]))).toEqual([null, "A", "D", "C"])
      expect(reads).toEqual([])

      // Past the time to live: read again.
      yield* TestClock.adjust("31 seconds")
      expect(classes(yield* capabilities.lookupAll([ids[0], ids[1]]))).toEqual(["A", null])
      expect([...reads].sort()).toEqual([ids[0], ids[1]])
    }).pipe(Effect.provide(layer(reads)))
  })
})
