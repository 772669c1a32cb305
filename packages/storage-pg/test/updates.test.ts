import { expect, layer } from "@effect/vitest"
import { RunnerRepository } from "@wes/core"
import { Fixtures as F } from "@wes/core/testing"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Statement from "effect/sql/Statement"
import { freshStore } from "./harness.js"

/** The SQL of every statement `effect` runs, and what `onUpdate` does before the first UPDATE runs. */
const recorded = <A, E, R>(effect: Effect.Effect<A, E, R>, onUpdate: Effect.Effect<unknown> = Effect.void) =>
  Effect.gen(function*() {
    const statements: Array<string> = []
    let interleaved = false
    const transformer: Statement.Transformer = (self) =>
      Effect.suspend(() => {
        const [text] = self.compile()
        statements.push(text)
        if (interleaved || !text.startsWith("UPDATE")) return Effect.succeed(self)
        interleaved = true
        return Effect.as(onUpdate, self)
      })
    const result = yield* Effect.provideService(effect, Statement.CurrentTransformer, transformer)
    return { result, statements }
  })

/** The columns an UPDATE statement sets. */
const setColumns = (text: string): Array<string> =>
  Array.from(/ SET (.*?)\s+WHERE /s.exec(text)?.[1]?.matchAll(/"(\w+)" = /g) ?? [], (m) => m[1]!)

layer(freshStore(), { excludeTestServices: true })("updates", (it) => {
  it.effect("an update is one statement: an UPDATE of the columns it changes, answering the row as stored (no read, no lock)", () =>
    Effect.gen(function*() {
      const repo = yield* RunnerRepository
      const owner = F.uuid()
      const r = F.runner(owner, { tags: ["gpu"], headers: { "X-Key": "k" } })
      yield* repo.insert(r)
      const { result, statements } = yield* recorded(repo.update(owner, r.id, { name: "renamed", updated_at: F.at(7) }))
      expect(statements).toHaveLength(1)
      expect(statements[0]).toMatch(/^UPDATE /)
      expect(statements[0]).toMatch(/ RETURNING /)
      expect(statements[0]).not.toMatch(/FOR UPDATE|xmin/)
      expect(setColumns(statements[0]!)).toEqual(["name", "updated_at"])
      expect(result).toEqual({ ...r, name: "renamed", updated_at: F.at(7) })
      expect(yield* repo.findById(r.id)).toEqual(Option.some(result))
    }))

  it.effect("an edit written just before another's UPDATE survives it, and the other's answer includes it", () =>
    Effect.gen(function*() {
      const repo = yield* RunnerRepository
      const owner = F.uuid()
      const r = F.runner(owner, { tags: ["a"] })
      yield* repo.insert(r)
      // Right before the first update's UPDATE runs, another disables the runner and retags it.
      const other = repo.update(owner, r.id, { status: "disabled", tags: ["other"], updated_at: F.at(1) }).pipe(Effect.orDie)
      const { result, statements } = yield* recorded(repo.update(owner, r.id, { name: "mine", updated_at: F.at(2) }), other)
      expect(result).toEqual({ ...r, name: "mine", status: "disabled", tags: ["other"], updated_at: F.at(2) })
      expect(yield* repo.findById(r.id)).toEqual(Option.some(result))
      // One statement each: its own (recorded as it was about to run), then the other's, which ran first.
      expect(statements.map(setColumns)).toEqual([["name", "updated_at"], ["status", "tags", "updated_at"]])
    }))

  it.effect("concurrent edits of one runner's different fields all survive", () =>
    Effect.gen(function*() {
      const repo = yield* RunnerRepository
      const owner = F.uuid()
      const r = F.runner(owner, { tags: [] })
      yield* repo.insert(r)
      const at = F.at(3)
      const edits = [
        { name: "renamed", updated_at: at },
        { status: "disabled", updated_at: at },
        { tags: ["t"], updated_at: at },
        { endpoint: "http://10.0.0.9:8188", updated_at: at },
        { headers: { "X-Key": "k" }, updated_at: at }
      ] as const
      const { statements } = yield* recorded(Effect.forEach(edits, (changes) => repo.update(owner, r.id, changes), { concurrency: "unbounded" }))
      expect(statements).toHaveLength(edits.length)
      const stored = Object.assign({}, r, ...edits)
      expect(yield* repo.findById(r.id)).toEqual(Option.some(stored))
    }))

  it.effect("another user's runner, or none, is RunnerNotFound, and nothing is written", () =>
    Effect.gen(function*() {
      const repo = yield* RunnerRepository
      const owner = F.uuid()
      const r = F.runner(owner)
      yield* repo.insert(r)
      const { result, statements } = yield* recorded(Effect.flip(repo.update(F.uuid(), r.id, { name: "stolen", updated_at: F.at(1) })))
      expect(result._tag).toBe("RunnerNotFound")
      expect(statements).toHaveLength(1)
      expect(yield* repo.findById(r.id)).toEqual(Option.some(r))
      const missing = yield* recorded(Effect.flip(repo.update(owner, F.uuid(), { name: "x", updated_at: F.at(1) })))
      expect([missing.result._tag, missing.statements.length]).toEqual(["RunnerNotFound", 1])
      const notAnId = yield* recorded(Effect.flip(repo.update(owner, "not-a-uuid", { name: "x", updated_at: F.at(1) })))
      expect([notAnId.result._tag, notAnId.statements.length]).toEqual(["RunnerNotFound", 0])
    }))
})
