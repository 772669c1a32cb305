/** Conformance cases of agent runners (their `connection`) and of runner tokens (issue 34). */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { RunnerTokenId } from "../domain/Ids.js"
import type { RunnerToken } from "../domain/RunnerToken.js"
import { RunnerLoad } from "../ports/RunnerLoad.js"
import { RunnerRepository } from "../ports/RunnerRepository.js"
import { RunnerTokenRepository } from "../ports/RunnerTokenRepository.js"
import { equal } from "./Assert.js"
import { c, type ConformanceCase } from "./Case.js"
import * as F from "./Fixtures.js"

const token = (runnerId: string, over: Partial<RunnerToken> = {}): RunnerToken => ({
  id: F.uuid() as RunnerTokenId,
  runner_id: runnerId as RunnerToken["runner_id"],
  token_hash: `hash-${F.uuid()}`,
  created_at: F.at(0),
  last_used_at: null,
  revoked_at: null,
  ...over
})

const ids = (items: ReadonlyArray<{ readonly id: string }>) => items.map((i) => i.id)

export const runnerTokenCases: ReadonlyArray<ConformanceCase> = [
  c("agent runners: the connection is stored, and scheduling candidates carry it", Effect.gen(function*() {
    const runners = yield* RunnerRepository
    const owner = F.user()
    const agent = F.runner(owner.id, { connection: "agent", endpoint: "http://agent.invalid", created_at: F.at(1) })
    const direct = F.runner(owner.id, { created_at: F.at(0) })
    yield* runners.insert(agent)
    yield* runners.insert(direct)
    yield* equal(Option.map(yield* runners.findById(agent.id), (r) => r.connection), Option.some("agent"), "agent runner")
    yield* equal(Option.map(yield* runners.findById(direct.id), (r) => r.connection), Option.some("direct"), "direct runner")
    const candidates = yield* (yield* RunnerLoad).candidates(owner.id, [])
    yield* equal(
      candidates.map((x) => [x.target.id, x.target.connection ?? "direct"]).sort(),
      [[agent.id, "agent"], [direct.id, "direct"]].sort(),
      "candidates' connection"
    )
  })),
  c("runner tokens: found by hash and id, listed newest first; use is recorded, never backwards", Effect.gen(function*() {
    const runners = yield* RunnerRepository
    const tokens = yield* RunnerTokenRepository
    const r = F.runner(F.user().id, { connection: "agent" })
    yield* runners.insert(r)
    const older = token(r.id, { created_at: F.at(1) })
    const newer = token(r.id, { created_at: F.at(2) })
    yield* equal(yield* tokens.insert(older, 10), "inserted", "first insert")
    yield* equal(yield* tokens.insert(newer, 10), "inserted", "second insert")
    yield* equal(yield* tokens.findByHash(older.token_hash), Option.some(older), "by hash")
    yield* equal(yield* tokens.findByHash("no such hash"), Option.none(), "unknown hash")
    yield* equal(yield* tokens.findById(newer.id), Option.some(newer), "by id")
    yield* equal(yield* tokens.findById("not-a-uuid"), Option.none(), "not an id")
    yield* equal(ids(yield* tokens.list(r.id)), [newer.id, older.id], "newest first")
    yield* equal(yield* tokens.list(F.uuid()), [], "another runner has none")
    yield* tokens.recordUse(older.id, F.at(5))
    yield* tokens.recordUse(older.id, F.at(4))
    yield* equal(Option.map(yield* tokens.findById(older.id), (t) => t.last_used_at), Option.some(F.at(5)), "last use, not moved back")
  })),
  c("runner tokens: at most the live limit, counted atomically; revoked ones do not count", Effect.gen(function*() {
    const runners = yield* RunnerRepository
    const tokens = yield* RunnerTokenRepository
    const r = F.runner(F.user().id, { connection: "agent" })
    yield* runners.insert(r)
    const outcomes = yield* Effect.all(Array.from({ length: 6 }, () => tokens.insert(token(r.id), 3)), { concurrency: "unbounded" })
    yield* equal(outcomes.filter((o) => o === "inserted").length, 3, "inserted up to the limit")
    yield* equal(outcomes.filter((o) => o === "limit_reached").length, 3, "the rest refused")
    const [first] = yield* tokens.list(r.id)
    yield* tokens.revoke(r.id, first!.id, F.at(9), 10)
    yield* equal(yield* tokens.insert(token(r.id), 3), "inserted", "a revoked token frees a place")
    yield* equal(yield* tokens.insert(token(F.uuid()), 3), "runner_gone", "a runner that is not there")
  })),
  c("runner tokens: revoked once (the first revoked_at stays), by their runner only; old revocations are pruned", Effect.gen(function*() {
    const runners = yield* RunnerRepository
    const tokens = yield* RunnerTokenRepository
    const owner = F.user()
    const r = F.runner(owner.id, { connection: "agent" })
    const other = F.runner(owner.id, { connection: "agent" })
    yield* runners.insert(r)
    yield* runners.insert(other)
    const all = Array.from({ length: 4 }, (_, i) => token(r.id, { created_at: F.at(i) }))
    for (const t of all) yield* tokens.insert(t, 10)
    yield* equal(yield* tokens.revoke(other.id, all[0]!.id, F.at(10), 2), Option.none(), "through another runner")
    yield* equal(yield* tokens.revoke(r.id, F.uuid(), F.at(10), 2), Option.none(), "an unknown token")
    yield* equal(yield* tokens.revoke(r.id, all[0]!.id, F.at(10), 2), Option.some({ ...all[0]!, revoked_at: F.at(10) }), "revoked")
    yield* equal(yield* tokens.revoke(r.id, all[0]!.id, F.at(11), 2), Option.some({ ...all[0]!, revoked_at: F.at(10) }), "again: unchanged")
    yield* tokens.revoke(r.id, all[1]!.id, F.at(12), 2)
    yield* tokens.revoke(r.id, all[2]!.id, F.at(13), 2)
    // Three revoked, two kept: the one revoked first goes.
    yield* equal(ids(yield* tokens.list(r.id)), [all[3]!.id, all[2]!.id, all[1]!.id], "oldest revocation pruned")
    yield* equal(yield* tokens.findByHash(all[0]!.token_hash), Option.none(), "pruned token gone")
  })),
  c("runner tokens: deleted with their runner", Effect.gen(function*() {
    const runners = yield* RunnerRepository
    const tokens = yield* RunnerTokenRepository
    const owner = F.user()
    const r = F.runner(owner.id, { connection: "agent" })
    yield* runners.insert(r)
    const t = token(r.id)
    yield* tokens.insert(t, 10)
    yield* equal(yield* runners.delete(owner.id, r.id), true, "runner deleted")
    yield* equal(yield* tokens.findByHash(t.token_hash), Option.none(), "by hash")
    yield* equal(yield* tokens.findById(t.id), Option.none(), "by id")
    yield* equal(yield* tokens.list(r.id), [], "listed")
  }))
]
