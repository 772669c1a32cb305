import { expect, layer } from "@effect/vitest"
import { type Runner, RunnerRepository } from "@wes/core"
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
  it.effect("an update reads the row once and writes only the columns it changed, in one UPDATE (no transaction, no lock)", () =>
    Effect.gen(function*() {
      const repo = yield* RunnerRepository
      const owner = F.uuid()
      const r = F.runner(owner, { tags: ["gpu"], headers: { "X-Key": "k" } })
      yield* repo.insert(r)
      const { statements } = yield* recorded(repo.update(owner, r.id, (x) => ({ ...x, name: "renamed", updated_at: F.at(7) })))
      expect(statements).toHaveLength(2)
      expect(statements[0]).toMatch(/^SELECT /)
      expect(statements[0]).not.toMatch(/FOR UPDATE/)
      expect(setColumns(statements[1]!)).toEqual(["name", "updated_at"])
      expect(yield* repo.findById(r.id)).toEqual(Option.some({ ...r, name: "renamed", updated_at: F.at(7) }))

      const unchanged = yield* recorded(repo.update(owner, r.id, (x) => x))
      expect(unchanged.statements).toHaveLength(1)
    }))

  it.effect("a write between an update's read and its UPDATE is not lost: the edit is applied again to the row as it is now", () =>
    Effect.gen(function*() {
      const repo = yield* RunnerRepository
      const owner = F.uuid()
      const r = F.runner(owner, { tags: ["a"] })
      yield* repo.insert(r)
      // Between the first update's read and its write, another adds a tag and disables the runner.
      const other = repo.update(owner, r.id, (x) => ({ ...x, status: "disabled", tags: [...x.tags, "other"] })).pipe(Effect.orDie)
      const { result, statements } = yield* recorded(
        repo.update(owner, r.id, (x) => ({ ...x, name: "mine", tags: [...x.tags, "mine"] })),
        other
      )
      expect(result).toMatchObject({ name: "mine", status: "disabled", tags: ["a", "other", "mine"] })
      expect(Option.map(yield* repo.findById(r.id), (x) => [x.name, x.status, x.tags])).toEqual(
        Option.some(["mine", "disabled", ["a", "other", "mine"]])
      )
      // Its read, its refused UPDATE, the other's read and UPDATE, then its read and UPDATE again.
      expect(statements.filter((s) => s.startsWith("UPDATE"))).toHaveLength(3)
    }))

  it.effect("concurrent edits of one runner, of the same field and of others, all survive", () =>
    Effect.gen(function*() {
      const repo = yield* RunnerRepository
      const owner = F.uuid()
      const r = F.runner(owner, { tags: [] })
      yield* repo.insert(r)
      const tags = Array.from({ length: 8 }, (_, i) => `t${i}`)
      const edits = [
        ...tags.map((tag) => (x: Runner): Runner => ({ ...x, tags: [...x.tags, tag] })),
        (x: Runner): Runner => ({ ...x, name: "renamed" }),
        (x: Runner): Runner => ({ ...x, status: "disabled" })
      ]
      yield* Effect.forEach(edits, (f) => repo.update(owner, r.id, f), { concurrency: "unbounded", discard: true })
      const stored = yield* repo.findById(r.id)
      expect(Option.map(stored, (x) => [x.name, x.status, [...x.tags].sort()])).toEqual(Option.some(["renamed", "disabled", tags]))
    }))

  it.effect("another user's runner, or none, is NotFound, and nothing is written", () =>
    Effect.gen(function*() {
      const repo = yield* RunnerRepository
      const owner = F.uuid()
      const r = F.runner(owner)
      yield* repo.insert(r)
      const { result, statements } = yield* recorded(Effect.flip(repo.update(F.uuid(), r.id, (x) => ({ ...x, name: "stolen" }))))
      expect(result._tag).toBe("NotFound")
      expect(statements.filter((s) => s.startsWith("UPDATE"))).toEqual([])
      expect(yield* repo.findById(r.id)).toEqual(Option.some(r))
    }))
})
