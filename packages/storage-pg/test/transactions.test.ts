import { expect, layer } from "@effect/vitest"
import * as SqlClient from "effect/sql/SqlClient"
import { storeErrors, TemplateRepository, WorkflowEventBus, WorkflowRepository, WorkflowTransition } from "@wes/core"
import { Fixtures as F } from "@wes/core/testing"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import { orStorageError, run, transaction } from "../src/Sql.js"
import { freshStore } from "./harness.js"

layer(freshStore(), { excludeTestServices: true })("writes and errors", (it) => {
  it.effect("a create refused by a limit writes nothing: no row, no event, no count", () =>
    Effect.gen(function*() {
      const workflows = yield* WorkflowRepository
      const bus = yield* WorkflowEventBus
      const owner = F.uuid()
      const limits = { active_workflows: 1, workflows_per_day: 5, day_start: F.at(0) }
      yield* workflows.create(F.workflow(owner), { limits })
      const refused = F.workflow(owner)
      const error = yield* workflows.create(refused, { limits }).pipe(Effect.flip)
      expect(error).toMatchObject({ _tag: "LimitReached", limit: "active_workflows" })
      expect(yield* workflows.findById(refused.id)).toEqual(Option.none())
      expect(yield* bus.lastSeq(refused.id)).toBe(0)
      expect(yield* workflows.countActive(owner)).toBe(1)
    }))

  it.effect("ending a workflow frees its place under the active limit", () =>
    Effect.gen(function*() {
      const workflows = yield* WorkflowRepository
      const owner = F.uuid()
      const limits = { active_workflows: 1, workflows_per_day: 5, day_start: F.at(0) }
      const first = F.workflow(owner)
      yield* workflows.create(first, { limits })
      yield* workflows.transition({ id: first.id, steps: [WorkflowTransition.Cancelled()], at: F.at(1) })
      yield* workflows.create(F.workflow(owner), { limits })
      expect(yield* workflows.countActive(owner)).toBe(1)
    }))

  it.effect("an SQL error becomes StorageError, and its message carries no values", () =>
    Effect.gen(function*() {
      const workflows = yield* WorkflowRepository
      const w = F.workflow(F.uuid(), { name: "secret-name" })
      yield* workflows.create(w)
      const error = yield* workflows.create(w).pipe(Effect.flip)
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
      expect(yield* workflows.transition({ id: "1 OR 1=1", steps: [WorkflowTransition.Cancelled()], at: F.at(1) })).toEqual({ _tag: "Missing" })
      expect(yield* workflows.list("x", { page: 1, per_page: 10 })).toEqual({ items: [], total: 0 })
      const runner = F.uuid()
      expect(yield* workflows.countInFlight(["x", runner])).toEqual(new Map([["x", 0], [runner, 0]]))
      expect(yield* templates.delete("x", "y")).toBe(false)
    }))
})

layer(freshStore(), { excludeTestServices: true })("store errors are counted", (it) => {
  it.effect("a failed statement and a failed transaction are counted in wes_store_errors_total under their operation", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const count = (operation: string) => Effect.map(Metric.value(Metric.withAttributes(storeErrors, { operation })), (s) => s.count)
      const statementBefore = yield* count("test.statement")
      const transactionBefore = yield* count("test.transaction")
      const failed = yield* run(sql`SELECT 1 / 0`).pipe(orStorageError("test.statement"), Effect.flip)
      expect(failed._tag).toBe("StorageError")
      // A statement of the transaction's own, not mapped by an operation: the transaction's failure.
      const aborted = yield* transaction(sql, "test.transaction")(sql`SELECT 1 / 0`).pipe(Effect.flip)
      expect(aborted).toMatchObject({ _tag: "StorageError" })
      expect(yield* count("test.statement")).toBe(statementBefore + 1)
      expect(yield* count("test.transaction")).toBe(transactionBefore + 1)
    }))
})
