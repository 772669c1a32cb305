import { it } from "@effect/vitest"
import {
  AccountRepository,
  AccountService,
  PlatformLive,
  RunnerProbe,
  RunnerGateway,
  TierPolicy,
  useCasesLayer
} from "@wes/core"
import { MemoryStoreLive } from "@wes/storage-memory"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/testing/TestClock"
import { describe, expect } from "vitest"
import { makeTestGateway, makeTestLayer, newUser } from "./harness.js"

/** The memory store with its account repository counting lookups and writes. */
const countingLayer = () => {
  const counts = { lookups: 0, writes: 0 }
  const store = Layer.effect(
    AccountRepository,
    Effect.map(AccountRepository, (repo) =>
      AccountRepository.of({
        ...repo,
        findTokenByHash: (hash) => Effect.andThen(Effect.sync(() => counts.lookups++), repo.findTokenByHash(hash)),
        recordTokenUse: (uses) => Effect.andThen(Effect.sync(() => (counts.writes += uses.length)), repo.recordTokenUse(uses))
      }))
  ).pipe(Layer.provideMerge(MemoryStoreLive))
  const gateway = Layer.succeed(RunnerGateway, makeTestGateway({ probes: [], cancels: [] }))
  const layer = useCasesLayer().pipe(
    Layer.provideMerge(Layer.mergeAll(store, gateway, RunnerProbe.Off, TierPolicy.Default, PlatformLive))
  )
  return { counts, layer }
}

describe("AccountService.authenticate", () => {
  const { counts, layer } = countingLayer()

  it.effect("answers the contract's three 401 causes", () =>
    Effect.gen(function*() {
      const accounts = yield* AccountService
      expect(yield* Effect.flip(accounts.authenticate(undefined))).toMatchObject({ _tag: "MissingAuthorization", message: "Missing authorization header" })
      expect(yield* Effect.flip(accounts.authenticate(""))).toMatchObject({ _tag: "MissingAuthorization" })
      const user = yield* newUser()
      const inAMinute = DateTime.addDuration(yield* DateTime.now, "1 minute")
      const soon = yield* accounts.issueToken(user.id, { name: "ci", expires_at: DateTime.formatIso(inAMinute) })
      const principal = yield* accounts.authenticate(`Bearer ${soon.token}`)
      expect(principal.user.id).toBe(user.id)
      expect((yield* accounts.authenticate(`bearer   ${soon.token}`)).token_id).toBe(soon.id)
      yield* TestClock.adjust("2 minutes")
      expect(yield* Effect.flip(accounts.authenticate(`Bearer ${soon.token}`))).toMatchObject({ _tag: "TokenExpired", message: "Token has expired" })
      yield* accounts.revokeToken(soon.id)
      expect(yield* Effect.flip(accounts.authenticate(`Bearer ${soon.token}`))).toMatchObject({ _tag: "InvalidToken", message: "Invalid token" })
    }).pipe(Effect.provide(layer)))

  it.effect("rejects malformed and checksum-failing tokens without a storage lookup", () =>
    Effect.gen(function*() {
      const accounts = yield* AccountService
      const user = yield* newUser()
      const issued = yield* accounts.issueToken(user.id, { name: "t" })
      const before = counts.lookups
      const flipped = issued.token.slice(0, -1) + (issued.token.endsWith("a") ? "b" : "a")
      for (const header of ["Basic abc", "Bearer", "Bearer wes_short", `Bearer ${flipped}`, `Token ${issued.token}`, `Bearer ${issued.token} extra`]) {
        expect(yield* Effect.flip(accounts.authenticate(header))).toMatchObject({ _tag: "InvalidToken" })
      }
      expect(counts.lookups).toBe(before)
    }).pipe(Effect.provide(layer)))

  it.effect("writes last_used_at at most once a minute per token, in batches", () =>
    Effect.gen(function*() {
      const accounts = yield* AccountService
      const repo = yield* AccountRepository
      const user = yield* newUser()
      const a = yield* accounts.issueToken(user.id, { name: "a" })
      const b = yield* accounts.issueToken(user.id, { name: "b" })
      const writes = counts.writes
      for (let i = 0; i < 20; i++) {
        yield* accounts.authenticate(`Bearer ${a.token}`)
        yield* accounts.authenticate(`Bearer ${b.token}`)
      }
      expect(counts.writes - writes).toBe(0)
      yield* TestClock.adjust("10 seconds")
      expect(counts.writes - writes).toBe(2)
      const used = Option.getOrThrow(yield* repo.findToken(a.id)).last_used_at
      expect(used).not.toBeNull()
      for (let i = 0; i < 20; i++) yield* accounts.authenticate(`Bearer ${a.token}`)
      yield* TestClock.adjust("30 seconds")
      expect(counts.writes - writes).toBe(2)
      yield* TestClock.adjust("30 seconds")
      yield* accounts.authenticate(`Bearer ${a.token}`)
      yield* TestClock.adjust("10 seconds")
      expect(counts.writes - writes).toBe(3)
    }).pipe(Effect.provide(layer)))
})

describe("AccountService users and tokens", () => {
  const { layer } = makeTestLayer()

  it.effect("reports the tier's limits and current usage", () =>
    Effect.gen(function*() {
      const accounts = yield* AccountService
      const user = yield* newUser("pro")
      const me = yield* accounts.currentUser(user)
      expect(me).toMatchObject({ id: user.id, tier: "pro", limits: { templates: 200, runners: 20 }, usage: { active_workflows: 0, workflows_today: 0, templates: 0, runners: 0 } })
      const upgraded = yield* accounts.updateUser(user.id, { tier: "plus" })
      expect((yield* accounts.currentUser(upgraded)).limits.workflow_params).toBe(200)
      expect(yield* Effect.flip(accounts.updateUser(user.id, { tier: "gold" }))).toMatchObject({ _tag: "ValidationError" })
    }).pipe(Effect.provide(layer)))

  it.effect("shows a token's value only when issued, and lists tokens without values", () =>
    Effect.gen(function*() {
      const accounts = yield* AccountService
      const user = yield* newUser()
      const issued = yield* accounts.issueToken(user.id, { name: "deploy" })
      expect(issued.token).toMatch(/^wes_[0-9A-Za-z]{42}$/)
      const listed = yield* accounts.listTokens(user.id)
      expect(listed.map((t) => t.id)).toEqual([issued.id])
      expect(JSON.stringify(listed)).not.toContain(issued.token)
      expect(Object.keys(listed[0]!).sort()).toEqual(["created_at", "expires_at", "id", "last_used_at", "name", "user_id"])
      expect(yield* Effect.flip(accounts.issueToken(crypto.randomUUID(), { name: "x" }))).toMatchObject({ _tag: "UserNotFound" })
      expect(yield* Effect.flip(accounts.issueToken(user.id, { name: "" }))).toMatchObject({ _tag: "ValidationError" })
    }).pipe(Effect.provide(layer)))
})
