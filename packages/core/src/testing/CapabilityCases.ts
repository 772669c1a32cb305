/** Conformance of the capability store: one record per runner, replaced by newer reads, and `due`. */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { CapabilityRepository, type StoredCapabilities } from "../ports/CapabilityRepository.js"
import { ManagedRunnerRepository } from "../ports/ManagedRunnerRepository.js"
import { RunnerRepository } from "../ports/RunnerRepository.js"
import { equal } from "./Assert.js"
import { c, type ConformanceCase } from "./Case.js"
import * as F from "./Fixtures.js"

const record = (runnerId: string, kind: "user" | "managed", minutes: number, classes: ReadonlyArray<string>): StoredCapabilities => ({
  runner_id: runnerId,
  runner_kind: kind,
  summary: {
    node_classes: classes,
    model_inputs: [["CheckpointLoaderSimple", "ckpt_name", 0]],
    file_lists: [["sd_xl_base_1.0.safetensors", "sub/v1-5.ckpt"]],
    widgets: [["KSampler", [["cfg", 1], ["sampler_name", 2], ["seed", 0]]], ["ImageStitch", [["match_image_size", 3]]]],
    // Bounds as ComfyUI sends them: 2^64 - 1 (read as a double), a fraction; numeric combo options.
    input_types: [
      { type: "INT", min: 0, max: 18446744073709552000 },
      { type: "FLOAT", min: 0, max: 100.5 },
      { type: "COMBO", options: ["euler", "dpmpp_2m", 6] },
      { type: "BOOLEAN" }
    ]
  },
  hash: `hash-${minutes}`,
  read_at: F.at(minutes)
})

export const capabilityCases: ReadonlyArray<ConformanceCase> = [
  c("capabilities: put, get, replace by a newer read (not an older one), remove", Effect.gen(function*() {
    const repo = yield* CapabilityRepository
    const runnerId = F.uuid()
    yield* equal(yield* repo.get(runnerId), Option.none(), "unknown before any read")
    const first = record(runnerId, "user", 10, ["CheckpointLoaderSimple", "KSampler"])
    yield* repo.put(first)
    yield* equal(yield* repo.get(runnerId), Option.some(first), "as stored")
    const newer = record(runnerId, "user", 20, ["KSampler"])
    yield* repo.put(newer)
    yield* equal(yield* repo.get(runnerId), Option.some(newer), "a newer read replaces it")
    yield* repo.put(record(runnerId, "user", 15, ["Stale"]))
    yield* equal(yield* repo.get(runnerId), Option.some(newer), "an older read (a slower instance) does not")
    yield* repo.remove(runnerId)
    yield* equal(yield* repo.get(runnerId), Option.none(), "removed")
    yield* equal(yield* repo.get("not-a-uuid"), Option.none(), "a malformed id names nothing")
  })),
  c("capabilities: due lists active runners of both kinds never read or read before the cutoff, oldest first", Effect.gen(function*() {
    const repo = yield* CapabilityRepository
    const runners = yield* RunnerRepository
    const managed = yield* ManagedRunnerRepository
    const owner = F.user()
    const never = F.runner(owner.id)
    const old = F.runner(owner.id)
    const fresh = F.runner(owner.id)
    const disabled = F.runner(owner.id, { status: "disabled" })
    const oldManaged = F.managedRunner()
    yield* Effect.forEach([never, old, fresh, disabled], (r) => runners.insert(r), { discard: true })
    yield* managed.insert(oldManaged)
    yield* repo.put(record(old.id, "user", 30, ["A"]))
    yield* repo.put(record(oldManaged.id, "managed", 20, ["A"]))
    yield* repo.put(record(fresh.id, "user", 90, ["A"]))
    const mine = new Set([never.id, old.id, fresh.id, disabled.id, oldManaged.id])
    const due = (yield* repo.due(F.at(60), 100_000)).filter((r) => mine.has(r.id))
    yield* equal(due, [{ kind: "user", id: never.id }, { kind: "managed", id: oldManaged.id }, { kind: "user", id: old.id }], "due")
    const bounded = yield* repo.due(DateTime.add(F.at(0), { days: 10_000 }), 1)
    yield* equal(bounded.length, 1, "at most limit")
  }))
]
