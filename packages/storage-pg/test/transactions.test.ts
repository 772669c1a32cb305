import { expect, layer } from "@effect/vitest"
import { LimitReached, TemplateRepository, Transactor, WorkflowEventBus, WorkflowRepository } from "@wes/core"
import { Fixtures as F } from "@wes/core/testing"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { freshStore } from "./harness.js"

layer(freshStore(), { excludeTestServices: true })("transactions and errors", (it) => {
  it.effect("a failed withTransaction rolls back: a template inserted inside is gone, its events too", () =>
    Effect.gen(function*() {
      const tx = yield* Transactor
      const templates = yield* TemplateRepository
      const bus = yield* WorkflowEventBus
      const t = F.template(F.uuid())
      const w = F.uuid()
      const error = yield* tx.withTransaction(Effect.gen(function*() {
        yield* templates.insert(t)
        yield* bus.publish(w, [{ type: "status", data: { status: "accepted" } }])
        expect(Option.isSome(yield* templates.findForUser(t.user_id, t.id))).toBe(true)
        return yield* Effect.fail("boom" as const)
      })).pipe(Effect.flip)
      expect(error).toBe("boom")
      expect(yield* templates.findForUser(t.user_id, t.id)).toEqual(Option.none())
      expect(yield* bus.lastSeq(w)).toBe(0)
    }))

  it.effect("a defect inside withTransaction rolls back too", () =>
    Effect.gen(function*() {
      const tx = yield* Transactor
      const templates = yield* TemplateRepository
      const t = F.template(F.uuid())
      const exit = yield* tx.withTransaction(Effect.zipRight(templates.insert(t), Effect.die("bug"))).pipe(Effect.exit)
      expect(exit._tag).toBe("Failure")
      expect(yield* templates.findForUser(t.user_id, t.id)).toEqual(Option.none())
    }))

  it.effect("a successful withTransaction commits the workflow and its events together", () =>
    Effect.gen(function*() {
      const tx = yield* Transactor
      const workflows = yield* WorkflowRepository
      const bus = yield* WorkflowEventBus
      const w = F.workflow(F.uuid())
      yield* tx.withTransaction(Effect.gen(function*() {
        yield* workflows.insert(w, { limits: { active_workflows: 5, workflows_per_day: 5, day_start: F.at(0) } })
        yield* bus.publish(w.id, [{ type: "status", data: { status: "accepted" } }])
        yield* workflows.update(w.id, (cur) => Either.right({ ...cur, status: "uploaded" as const }))
        yield* bus.publish(w.id, [{ type: "status", data: { status: "uploaded" } }])
      }))
      expect(Option.map(yield* workflows.findById(w.id), (x) => x.status)).toEqual(Option.some("uploaded"))
      expect((yield* bus.read(w.id, 0, 10)).map((e) => e.seq)).toEqual([1, 2])
    }))

  it.effect("a repository call that fails inside a transaction undoes only its own work (savepoint)", () =>
    Effect.gen(function*() {
      const tx = yield* Transactor
      const templates = yield* TemplateRepository
      const owner = F.uuid()
      const first = F.template(owner)
      const second = F.template(owner)
      const refused = yield* tx.withTransaction(Effect.gen(function*() {
        yield* templates.insert(first, 1)
        const over = yield* Effect.either(templates.insert(second, 1))
        // The transaction is still usable after the refused insert.
        expect(yield* templates.count(owner)).toBe(1)
        return over
      }))
      expect(Either.isLeft(refused) && refused.left instanceof LimitReached).toBe(true)
      expect(yield* templates.count(owner)).toBe(1)
    }))

  it.effect("an SQL error becomes StorageError, and its message carries no values", () =>
    Effect.gen(function*() {
      const workflows = yield* WorkflowRepository
      const w = F.workflow(F.uuid(), { name: "secret-name" })
      yield* workflows.insert(w)
      const error = yield* workflows.insert(w).pipe(Effect.flip)
      expect(error._tag).toBe("StorageError")
      expect(error.message).toContain("SQLSTATE 23505")
      expect(error.message).not.toContain(w.id)
      expect(error.message).not.toContain("secret-name")
    }))

  it.effect("ids that are not UUIDs name nothing", () =>
    Effect.gen(function*() {
      const workflows = yield* WorkflowRepository
      const templates = yield* TemplateRepository
      expect(yield* workflows.findById("not-a-uuid")).toEqual(Option.none())
      expect((yield* workflows.update("1 OR 1=1", (w) => Either.right(w)).pipe(Effect.flip))._tag).toBe("NotFound")
      expect(yield* workflows.list("x", { page: 1, per_page: 10 })).toEqual({ items: [], total: 0 })
      const runner = F.uuid()
      expect(yield* workflows.countInFlight(["x", runner])).toEqual(new Map([["x", 0], [runner, 0]]))
      expect(yield* templates.delete("x", "y")).toBe(false)
    }))
})
