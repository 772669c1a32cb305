import { it } from "@effect/vitest"
import { TemplateService } from "@wes/core"
import * as Effect from "effect/Effect"
import { describe, expect } from "vitest"
import { detailsOf, errorsOf, makeTestLayer, newUser, smoke } from "./harness.js"

describe("TemplateService", () => {
  const { layer } = makeTestLayer()

  it.effect("creates, reads, updates and deletes a template of the caller", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      const templates = yield* TemplateService
      const t = yield* templates.create(user, { name: "portrait", description: "a portrait flow", body: smoke() })
      expect(t).toMatchObject({ name: "portrait", description: "a portrait flow", body: smoke(), user_id: user.id })
      const renamed = yield* templates.update(user, t.id, { name: "portrait v2" })
      expect([renamed.name, renamed.description, renamed.body]).toEqual(["portrait v2", "a portrait flow", smoke()])
      const rebodied = yield* templates.update(user, t.id, { body: smoke({ width: 128 }) })
      expect(rebodied.body).toEqual(smoke({ width: 128 }))
      yield* templates.delete(user, t.id)
      expect(yield* Effect.flip(templates.get(user, t.id))).toMatchObject({ _tag: "TemplateNotFound", message: "Template not found" })
    }).pipe(Effect.provide(layer)))

  it.effect("checks name (1-100) and description (1-500) at and past their bounds", () =>
    Effect.gen(function*() {
      const user = yield* newUser("pro")
      const templates = yield* TemplateService
      yield* templates.create(user, { name: "n".repeat(100), description: "d".repeat(500), body: smoke() })
      const name = yield* Effect.flip(templates.create(user, { name: "n".repeat(101), description: "d", body: smoke() }))
      expect(name).toMatchObject({ _tag: "ValidationError", message: "name: must be 1-100 characters" })
      const desc = yield* Effect.flip(templates.create(user, { name: "n", description: "d".repeat(501), body: smoke() }))
      expect(desc.message).toBe("description: must be 1-500 characters")
      const missing = yield* Effect.flip(templates.create(user, { body: smoke() }))
      expect(detailsOf(missing).map((d) => d.field).sort()).toEqual(["description", "name"])
      const empty = yield* Effect.flip(templates.create(user, { name: "", description: "d", body: smoke() }))
      expect(empty.message).toBe("name: must be 1-100 characters")
    }).pipe(Effect.provide(layer)))

  it.effect("rejects a body that is not an API-format workflow, naming the body", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      const templates = yield* TemplateService
      const ui = yield* Effect.flip(templates.create(user, { name: "n", description: "d", body: { nodes: [], links: [] } }))
      expect(detailsOf(ui)[0]!.field).toBe("body")
      const t = yield* templates.create(user, { name: "n", description: "d", body: smoke() })
      const bad = yield* Effect.flip(templates.update(user, t.id, { body: { "1": { class_type: "X" } } }))
      expect(detailsOf(bad)[0]!.field).toBe("body.1.inputs")
    }).pipe(Effect.provide(layer)))

  it.effect("keeps templates personal: another user's template is 404 everywhere", () =>
    Effect.gen(function*() {
      const owner = yield* newUser()
      const other = yield* newUser()
      const templates = yield* TemplateService
      const t = yield* templates.create(owner, { name: "n", description: "d", body: smoke() })
      for (const e of yield* errorsOf([templates.get(other, t.id), templates.update(other, t.id, { name: "x" }), templates.delete(other, t.id)])) {
        expect(e).toMatchObject({ _tag: "TemplateNotFound" })
      }
      expect((yield* templates.list(other, {})).total).toBe(0)
      expect((yield* templates.get(owner, t.id)).name).toBe("n")
    }).pipe(Effect.provide(layer)))

  it.effect("allows the tier's template count exactly and refuses one more", () =>
    Effect.gen(function*() {
      const user = yield* newUser("free")
      const templates = yield* TemplateService
      for (let i = 0; i < 10; i++) yield* templates.create(user, { name: `t${i}`, description: "d", body: smoke() })
      const eleventh = yield* Effect.flip(templates.create(user, { name: "t10", description: "d", body: smoke() }))
      expect(eleventh).toMatchObject({ _tag: "TierLimitExceeded", message: "Template limit exceeded: the free tier allows 10 templates" })
      const page = yield* templates.list(user, { page: 2, per_page: 4 })
      expect([page.total, page.items.map((t) => t.name)]).toEqual([10, ["t5", "t4", "t3", "t2"]])
      expect(page.items.every((t) => !("body" in t))).toBe(true)
    }).pipe(Effect.provide(layer)))
})
