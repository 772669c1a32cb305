import { it } from "@effect/vitest"
import { ManagedRunnerService, RunnerService, WorkflowService } from "@wes/core"
import * as Effect from "effect/Effect"
import { describe, expect } from "vitest"
import { COMFYUI_0_3_64, errorsOf, makeTestLayer, newRunner, newUser, smoke } from "./harness.js"

const valid = { name: "box", endpoint: "http://127.0.0.1:8188" }

describe("RunnerService", () => {
  const { calls, layer } = makeTestLayer()

  it.effect("creates an active runner with headers and normalized tags after probing it", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      const runners = yield* RunnerService
      const r = yield* runners.create(user, { ...valid, endpoint: "https://gpu.example.com/comfy", headers: { "X-Api-Key": "k" }, tags: ["GPU", " sdxl "] })
      expect(r).toMatchObject({ status: "active", endpoint: "https://gpu.example.com/comfy", headers: { "X-Api-Key": "k" }, tags: ["gpu", "sdxl"], user_id: user.id })
      expect(calls.probes).toContain("https://gpu.example.com/comfy")
    }).pipe(Effect.provide(layer)))

  it.effect("validates name, endpoint, tags and headers, naming the field", () =>
    Effect.gen(function*() {
      const user = yield* newUser("plus")
      const runners = yield* RunnerService
      const field = (input: unknown) => Effect.map(Effect.flip(runners.create(user, input)), (e) => e._tag === "ValidationError" ? e.details[0]!.field : e._tag)
      expect(yield* field({ ...valid, name: "" })).toBe("name")
      expect(yield* field({ ...valid, name: "n".repeat(101) })).toBe("name")
      yield* runners.create(user, { ...valid, name: "n".repeat(100) })
      expect(yield* field({ name: "x" })).toBe("endpoint")
      for (const endpoint of ["ftp://host", "not a url", "http://", "http://u:p@host", "javascript:alert(1)"]) {
        expect(yield* field({ ...valid, endpoint })).toBe("endpoint")
      }
      expect(yield* field({ ...valid, tags: Array.from({ length: 11 }, (_, i) => `t${i}`) })).toBe("tags")
      yield* runners.create(user, { ...valid, tags: Array.from({ length: 10 }, (_, i) => `t${i}`) })
      expect(yield* field({ ...valid, tags: [""] })).toBe("tags.0")
      expect(yield* field({ ...valid, headers: { a: 1 } })).toBe("headers.a")
      expect(yield* field({ ...valid, headers: ["a"] })).toBe("headers")
      expect(yield* field({ ...valid, headers: { "X-Evil": "a\r\nHost: other" } })).toBe("headers")
      expect(yield* field({ ...valid, headers: { "Bad Name": "v" } })).toBe("headers")
      expect(yield* field({ ...valid, extra: true })).toBe("extra")
    }).pipe(Effect.provide(layer)))

  it.effect("refuses an endpoint that does not answer the probe", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      const err = yield* Effect.flip((yield* RunnerService).create(user, { ...valid, endpoint: "http://unreachable.invalid:8188" }))
      expect(err).toMatchObject({ _tag: "RunnerProbeFailed", message: "runner endpoint is not reachable: the connection failed" })
    }).pipe(Effect.provide(layer)))

  it.effect("skips the probe when it is turned off", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      const r = yield* (yield* RunnerService).create(user, { ...valid, endpoint: "http://unreachable.invalid:8188" })
      expect(r.status).toBe("active")
    }).pipe(Effect.provide(makeTestLayer({ probe: false }).layer)))

  it.effect("allows the tier's runner count exactly and refuses one more", () =>
    Effect.gen(function*() {
      const user = yield* newUser("free")
      const runners = yield* RunnerService
      yield* runners.create(user, valid)
      yield* runners.create(user, valid)
      expect(yield* Effect.flip(runners.create(user, valid))).toMatchObject({ _tag: "TierLimitExceeded", message: "Runner limit exceeded: the free tier allows 2 runners" })
    }).pipe(Effect.provide(layer)))

  it.effect("updates only what is sent, replaces tags, probes a new endpoint, and disables", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      const runners = yield* RunnerService
      const r = yield* runners.create(user, { ...valid, tags: ["a", "b"], headers: { "X-K": "1" } })
      const tagged = yield* runners.update(user, r.id, { tags: ["c"] })
      expect([tagged.name, tagged.tags, tagged.headers]).toEqual(["box", ["c"], { "X-K": "1" }])
      expect(yield* Effect.flip(runners.update(user, r.id, { endpoint: "http://unreachable.invalid" }))).toMatchObject({ _tag: "RunnerProbeFailed" })
      expect(yield* Effect.flip(runners.update(user, r.id, { status: "paused" }))).toMatchObject({ _tag: "ValidationError", details: [{ field: "status" }] })
      const off = yield* runners.update(user, r.id, { status: "disabled" })
      expect(off.status).toBe("disabled")
      expect((yield* runners.list(user, { status: "disabled" })).items.map((x) => x.id)).toEqual([r.id])
      expect(yield* Effect.flip(runners.list(user, { status: "paused" }))).toMatchObject({ _tag: "ValidationError" })
    }).pipe(Effect.provide(layer)))

  it.effect("hides another user's runner as 404 on every {id} operation", () =>
    Effect.gen(function*() {
      const owner = yield* newUser()
      const other = yield* newUser()
      const runners = yield* RunnerService
      const r = yield* newRunner(owner)
      for (const e of yield* errorsOf([runners.get(other, r.id), runners.update(other, r.id, { name: "x" }), runners.delete(other, r.id), runners.history(other, r.id)])) {
        expect(e).toMatchObject({ _tag: "RunnerNotFound", message: "Runner not found" })
      }
    }).pipe(Effect.provide(layer)))

  it.effect("keeps a runner with unfinished work from being deleted, and lists its history newest first", () =>
    Effect.gen(function*() {
      const user = yield* newUser("pro")
      const runners = yield* RunnerService
      const workflows = yield* WorkflowService
      const r = yield* newRunner(user)
      const made: Array<string> = []
      for (let i = 0; i < 12; i++) made.push((yield* workflows.create(user, { name: `w${i}`, workflow_json: smoke() })).id)
      const history = yield* runners.history(user, r.id)
      expect(history.map((w) => w.id)).toEqual(made.slice().reverse().slice(0, 10))
      expect(Object.keys(history[0]!).sort()).toEqual(["completed_at", "created_at", "id", "name", "started_at", "status", "tags", "updated_at"])
      expect(yield* Effect.flip(runners.delete(user, r.id))).toMatchObject({ _tag: "Conflict" })
      yield* Effect.forEach(made, (id) => workflows.cancel(user, id))
      yield* runners.delete(user, r.id)
      expect(yield* Effect.flip(runners.get(user, r.id))).toMatchObject({ _tag: "RunnerNotFound" })
    }).pipe(Effect.provide(layer)))
})

describe("ManagedRunnerService", () => {
  const { layer } = makeTestLayer()

  it.effect("refuses free users with 403 and shows pro and plus users the active runners of their tier", () =>
    Effect.gen(function*() {
      const managed = yield* ManagedRunnerService
      const pro = yield* managed.adminCreate({ name: "pro-1", runner_type: "pro", endpoint: "http://10.0.0.1:8188", headers: { Authorization: "Bearer s" } })
      const plus = yield* managed.adminCreate({ name: "plus-1", runner_type: "plus", endpoint: "http://10.0.0.2:8188" })
      yield* managed.adminCreate({ name: "pro-off", runner_type: "pro", endpoint: "http://10.0.0.3:8188", status: "disabled" })
      const free = yield* newUser("free")
      expect(yield* Effect.flip(managed.list(free, {}))).toMatchObject({ _tag: "ManagedRunnersForbidden", message: "Managed runners require the pro or plus tier" })
      expect(yield* Effect.flip(managed.history(free, pro.id))).toMatchObject({ _tag: "ManagedRunnersForbidden" })
      const proList = yield* managed.list(yield* newUser("pro"), {})
      expect([proList.total, proList.items.map((r) => r.id)]).toEqual([1, [pro.id]])
      expect(Object.keys(proList.items[0]!).sort()).toEqual(["created_at", "id", "name", "runner_type", "status", "tags", "updated_at"])
      const plusList = yield* managed.list(yield* newUser("plus"), {})
      expect(plusList.items.map((r) => r.id)).toEqual([plus.id, pro.id])
    }).pipe(Effect.provide(layer)))

  it.effect("gives history of runners the tier may use, and 404 for others", () =>
    Effect.gen(function*() {
      const managed = yield* ManagedRunnerService
      const workflows = yield* WorkflowService
      const plusBox = yield* managed.adminCreate({ name: "plus-2", runner_type: "plus", endpoint: "http://10.0.0.4:8188", tags: ["p2"] })
      const proUser = yield* newUser("pro")
      expect(yield* Effect.flip(managed.history(proUser, plusBox.id))).toMatchObject({ _tag: "ManagedRunnerNotFound", message: "Managed runner not found" })
      expect(yield* Effect.flip(managed.history(proUser, crypto.randomUUID()))).toMatchObject({ _tag: "ManagedRunnerNotFound" })
      const plusUser = yield* newUser("plus")
      const other = yield* newUser("plus")
      const w = yield* workflows.create(plusUser, { name: "on managed", workflow_json: smoke(), tags: "p2" })
      yield* workflows.create(other, { name: "not mine", workflow_json: smoke(), tags: "p2" })
      expect((yield* managed.history(plusUser, plusBox.id)).map((x) => x.id)).toEqual([w.id])
      expect(yield* Effect.flip(managed.adminDelete(plusBox.id))).toMatchObject({ _tag: "Conflict" })
    }).pipe(Effect.provide(layer)))

  it.effect("lets the operator update and delete managed runners", () =>
    Effect.gen(function*() {
      const managed = yield* ManagedRunnerService
      const r = yield* managed.adminCreate({ name: "m", runner_type: "pro", endpoint: "http://10.0.0.5:8188" })
      const updated = yield* managed.adminUpdate(r.id, { status: "disabled", tags: ["X"] })
      expect([updated.status, updated.tags, updated.endpoint]).toEqual(["disabled", ["x"], "http://10.0.0.5:8188"])
      yield* managed.adminDelete(r.id)
      expect(yield* Effect.flip(managed.adminGet(r.id))).toMatchObject({ _tag: "ManagedRunnerNotFound" })
    }).pipe(Effect.provide(layer)))
})

describe("ComfyUI versions at registration", () => {
  /** A fresh core whose runners answer the probe with `version`. */
  const withVersion = (version: string | null) => {
    const t = makeTestLayer()
    t.calls.comfyui = { ...COMFYUI_0_3_64, version }
    return t
  }

  it.effect("refuses a runner below ComfyUI 0.3.45 with 400 naming the minimum: user and managed runners, created or moved", () => {
    const t = withVersion("0.3.44")
    return Effect.gen(function*() {
      const user = yield* newUser()
      const runners = yield* RunnerService
      const managed = yield* ManagedRunnerService
      const refusal = { _tag: "RunnerProbeFailed", message: "runner runs ComfyUI 0.3.44; WES needs ComfyUI 0.3.45 or later" }
      expect(yield* Effect.flip(runners.create(user, valid))).toMatchObject(refusal)
      expect(yield* Effect.flip(managed.adminCreate({ name: "m", runner_type: "pro", endpoint: "http://10.0.0.9:8188" }))).toMatchObject(refusal)
      expect((yield* runners.list(user, {})).total).toBe(0)
      // Registered on a supported ComfyUI, then moved to an old one: refused, and the record keeps what it was.
      t.calls.comfyui = COMFYUI_0_3_64
      const r = yield* runners.create(user, valid)
      const m = yield* managed.adminCreate({ name: "m", runner_type: "pro", endpoint: "http://10.0.0.9:8188" })
      t.calls.comfyui = { ...COMFYUI_0_3_64, version: "0.3.30" }
      expect(yield* Effect.flip(runners.update(user, r.id, { endpoint: "http://10.0.0.7:8188" }))).toMatchObject({ _tag: "RunnerProbeFailed", message: expect.stringContaining("0.3.30") })
      expect(yield* Effect.flip(managed.adminUpdate(m.id, { endpoint: "http://10.0.0.8:8188" }))).toMatchObject({ _tag: "RunnerProbeFailed" })
      expect((yield* runners.get(user, r.id))).toMatchObject({ endpoint: valid.endpoint, comfyui: COMFYUI_0_3_64 })
      // Other changes do not probe.
      expect((yield* runners.update(user, r.id, { name: "renamed" })).comfyui).toEqual(COMFYUI_0_3_64)
    }).pipe(Effect.provide(t.layer))
  })

  it.effect("accepts 0.3.45 to 0.3.56 with a warning about the cancel race, and shows the version and devices the probe found", () => {
    const t = withVersion("0.3.50")
    return Effect.gen(function*() {
      const user = yield* newUser()
      const runners = yield* RunnerService
      const managed = yield* ManagedRunnerService
      const r = yield* runners.create(user, valid)
      const expected = { comfyui: { ...COMFYUI_0_3_64, version: "0.3.50" }, warning: expect.stringContaining("a cancel that comes as its prompt ends may stop the next prompt") }
      expect(r).toMatchObject(expected)
      expect(yield* runners.get(user, r.id)).toMatchObject(expected)
      expect((yield* runners.list(user, {})).items[0]).toMatchObject(expected)
      const m = yield* managed.adminCreate({ name: "m", runner_type: "pro", endpoint: "http://10.0.0.9:8188" })
      expect(yield* managed.adminGet(m.id)).toMatchObject(expected)
      // Moved to a newer ComfyUI: the new answer replaces the old, and the warning goes.
      t.calls.comfyui = { ...COMFYUI_0_3_64, version: "0.3.57", jobs_api: true }
      expect(yield* runners.update(user, r.id, { endpoint: "http://10.0.0.7:8188" })).toMatchObject({ comfyui: t.calls.comfyui, warning: null })
    }).pipe(Effect.provide(t.layer))
  })
})
