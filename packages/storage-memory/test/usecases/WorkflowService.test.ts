import { it } from "@effect/vitest"
import { BlobStore, ManagedRunnerService, RunnerService, TemplateService, type User, WorkflowService, WorkflowTransition } from "@wes/core"
import { Lifecycle } from "@wes/core/testing"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { describe, expect } from "vitest"
import { errorsOf, fileOf, makeTestLayer, newRunner, newUser, smoke } from "./harness.js"

const text = (field: string, t: string) => ({ field, value: { _tag: "Text" as const, text: t } })
const file = (field: string, name: string, body: string) => ({ field, value: { _tag: "File" as const, file: fileOf(name, body) } })

describe("WorkflowService.create", () => {
  const { layer } = makeTestLayer()

  it.effect("creates an accepted workflow on a runner and records what it was given", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      const runner = yield* newRunner(user)
      const workflows = yield* WorkflowService
      const json = smoke({ color: "$text(color, 255)" })
      const w = yield* workflows.create(user, { name: "smoke", workflow_json: json, tags: "" })
      expect(w).toMatchObject({ name: "smoke", status: "accepted", tags: [], started_at: null, completed_at: null, user_runner_id: runner.id, managed_runner_id: null })
      const stored = yield* workflows.get(user, w.id)
      expect(stored.workflow_json).toEqual(json)
      expect(stored.workflow_params).toEqual([["$text(color)", "255"]])
      expect([stored.prompt_id, stored.queue_number, stored.error_node]).toEqual([null, null, null])
    }).pipe(Effect.provide(layer)))

  it.effect("requires a name of 1-200 characters", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      yield* newRunner(user)
      const workflows = yield* WorkflowService
      const missing = yield* Effect.flip(workflows.create(user, { workflow_json: smoke() }))
      expect(missing).toMatchObject({ _tag: "ValidationError", message: "name: is required" })
      const long = yield* Effect.flip(workflows.create(user, { name: "x".repeat(201), workflow_json: smoke() }))
      expect(long.message).toBe("name: must be 1-200 characters")
      const exact = yield* workflows.create(user, { name: "x".repeat(200), workflow_json: smoke() })
      expect(exact.name).toHaveLength(200)
    }).pipe(Effect.provide(layer)))

  it.effect("requires workflow_json or template_id, not both, and API format", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      yield* newRunner(user)
      const workflows = yield* WorkflowService
      expect((yield* Effect.flip(workflows.create(user, { name: "a" }))).message).toBe("workflow_json: is required")
      const both = yield* Effect.flip(workflows.create(user, { name: "a", workflow_json: smoke(), template_id: crypto.randomUUID() }))
      expect(both.message).toContain("not both")
      const ui = yield* Effect.flip(workflows.create(user, { name: "a", workflow_json: { nodes: [], links: [] } }))
      expect(ui.message).toContain("export it in API format")
    }).pipe(Effect.provide(layer)))

  it.effect("says no runner is available when none matches the tags", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      const workflows = yield* WorkflowService
      const none = yield* Effect.flip(workflows.create(user, { name: "a", workflow_json: smoke() }))
      expect(none._tag).toBe("NoEligibleRunner")
      yield* newRunner(user, ["gpu"])
      const wrong = yield* Effect.flip(workflows.create(user, { name: "a", workflow_json: smoke(), tags: "gpu,xl" }))
      expect(wrong).toMatchObject({ _tag: "NoEligibleRunner", message: "No runner available with matching tags: no active runner has all of gpu, xl" })
      const badTags = yield* Effect.flip(workflows.create(user, { name: "a", workflow_json: smoke(), tags: "gpu,,xl" }))
      expect(badTags._tag).toBe("ValidationError")
    }).pipe(Effect.provide(layer)))

  it.effect("routes by tags across three runners, case-insensitively, skipping disabled ones", () =>
    Effect.gen(function*() {
      const user = yield* newUser("pro")
      const a = yield* newRunner(user, ["gpu", "sdxl"], "a")
      const b = yield* newRunner(user, ["gpu"], "b")
      const c = yield* newRunner(user, ["cpu"], "c")
      const workflows = yield* WorkflowService
      const runners = yield* RunnerService
      const on = (tags: string) => Effect.map(workflows.create(user, { name: "t", workflow_json: smoke(), tags }), (w) => w.user_runner_id)
      expect(yield* on("SDXL")).toBe(a.id)
      expect(yield* on("cpu")).toBe(c.id)
      yield* runners.update(user, a.id, { status: "disabled" })
      expect((yield* Effect.flip(on("sdxl")))._tag).toBe("NoEligibleRunner")
      expect(yield* on("gpu")).toBe(b.id)
    }).pipe(Effect.provide(layer)))

  it.effect("shares load between runners: least in flight first", () =>
    Effect.gen(function*() {
      const user = yield* newUser("pro")
      const a = yield* newRunner(user, [], "a")
      const b = yield* newRunner(user, [], "b")
      const workflows = yield* WorkflowService
      const picks = yield* Effect.forEach(Array.from({ length: 6 }), () =>
        Effect.map(workflows.create(user, { name: "t", workflow_json: smoke() }), (w) => w.user_runner_id))
      expect(picks.filter((p) => p === a.id)).toHaveLength(3)
      expect(picks.filter((p) => p === b.id)).toHaveLength(3)
      // A runner with less in flight wins regardless of order.
      const first = (yield* workflows.list(user, { per_page: 100 })).items.find(() => true)!
      yield* workflows.cancel(user, first.id)
      const loser = picks[5]!
      const next = yield* workflows.create(user, { name: "t", workflow_json: smoke() })
      expect(next.user_runner_id).toBe(loser)
    }).pipe(Effect.provide(layer)))

  it.effect("uses managed runners for paid tiers only, by runner type", () =>
    Effect.gen(function*() {
      const managed = yield* ManagedRunnerService
      const pro = yield* managed.adminCreate({ name: "pro-box", runner_type: "pro", endpoint: "http://10.0.0.1:8188", tags: ["shared"] })
      yield* managed.adminCreate({ name: "plus-box", runner_type: "plus", endpoint: "http://10.0.0.2:8188", tags: ["plusonly"] })
      const workflows = yield* WorkflowService
      const free = yield* newUser("free")
      expect((yield* Effect.flip(workflows.create(free, { name: "t", workflow_json: smoke(), tags: "shared" })))._tag).toBe("NoEligibleRunner")
      const proUser = yield* newUser("pro")
      const w = yield* workflows.create(proUser, { name: "t", workflow_json: smoke(), tags: "shared" })
      expect([w.managed_runner_id, w.user_runner_id]).toEqual([pro.id, null])
      expect((yield* Effect.flip(workflows.create(proUser, { name: "t", workflow_json: smoke(), tags: "plusonly" })))._tag).toBe("NoEligibleRunner")
      const plusUser = yield* newUser("plus")
      expect((yield* workflows.create(plusUser, { name: "t", workflow_json: smoke(), tags: "plusonly" })).managed_runner_id).not.toBeNull()
    }).pipe(Effect.provide(makeTestLayer().layer)))

  it.effect("stores file parameters in the blob store and records their path", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      yield* newRunner(user)
      const workflows = yield* WorkflowService
      const blobs = yield* BlobStore
      const json = { ...smoke(), "4": { class_type: "LoadImage", inputs: { image: "$file(photo)" } } }
      const w = yield* workflows.create(user, { name: "f", workflow_json: json, params: [file("$photo", "../../etc/cat photo.png", "PNGDATA")] })
      const [[placeholder, key]] = (yield* workflows.get(user, w.id)).workflow_params as unknown as [[string, string]]
      expect(placeholder).toBe("$file(photo)")
      expect(key).toBe(`inputs/${w.id}/photo/cat_photo.png`)
      const blob = Option.getOrThrow(yield* blobs.get(key))
      expect(blob.size).toBe(7)
    }).pipe(Effect.provide(layer)))

  it.effect("rejects unknown and mistyped parameters, naming them", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      yield* newRunner(user)
      const workflows = yield* WorkflowService
      const json = smoke({ color: "$text(color)" })
      const unknown = yield* Effect.flip(workflows.create(user, { name: "p", workflow_json: json, params: [text("$color", "1"), text("$size", "2")] }))
      expect(unknown).toMatchObject({ _tag: "ValidationError", details: [{ field: "$size" }] })
      const mistyped = yield* Effect.flip(workflows.create(user, { name: "p", workflow_json: json, params: [file("$color", "c.png", "x")] }))
      expect(mistyped.message).toContain("$text(color) needs a text value")
      const missing = yield* Effect.flip(workflows.create(user, { name: "p", workflow_json: json }))
      expect(missing.message).toContain("$color is required")
    }).pipe(Effect.provide(layer)))

  it.effect("enforces the tier's parameter limit at exactly the limit and one past it", () =>
    Effect.gen(function*() {
      const user = yield* newUser("free")
      yield* newRunner(user)
      const workflows = yield* WorkflowService
      const withParams = (n: number) =>
        Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, `$text(p${i}, x)`]))
      const ten = yield* workflows.create(user, { name: "ten", workflow_json: smoke(withParams(10)) })
      expect((yield* workflows.get(user, ten.id)).workflow_params).toHaveLength(10)
      const eleven = yield* Effect.flip(workflows.create(user, { name: "eleven", workflow_json: smoke(withParams(11)) }))
      expect(eleven).toMatchObject({ _tag: "TierLimitExceeded", message: "Workflow parameter limit exceeded: the free tier allows 10 parameters per workflow" })
    }).pipe(Effect.provide(layer)))

  it.effect("enforces unfinished and daily workflow limits", () =>
    Effect.gen(function*() {
      const user = yield* newUser("free")
      yield* newRunner(user)
      const workflows = yield* WorkflowService
      const create = workflows.create(user, { name: "w", workflow_json: smoke() })
      const five = yield* Effect.all(Array.from({ length: 5 }, () => create))
      const sixth = yield* Effect.flip(create)
      expect(sixth.message).toBe("Active workflow limit exceeded: the free tier allows 5 unfinished workflows at a time")
      yield* workflows.cancel(user, five[0]!.id)
      yield* create
      yield* Effect.all(five.slice(1).map((w) => workflows.cancel(user, w.id)))
      const daily = yield* Effect.flip(Effect.all(Array.from({ length: 3 }, () => create)))
      expect(daily.message).toBe("Daily workflow limit exceeded: the free tier allows 7 workflows per day")
    }).pipe(Effect.provide(makeTestLayer({ tiers: { free: { workflows_per_day: 7 } } }).layer)))

  it.effect("creates from a template of the caller only", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      const other = yield* newUser()
      yield* newRunner(user)
      const templates = yield* TemplateService
      const t = yield* templates.create(user, { name: "tpl", description: "d", body: smoke() })
      const theirs = yield* templates.create(other, { name: "tpl", description: "d", body: smoke({ width: 32 }) })
      const workflows = yield* WorkflowService
      const w = yield* workflows.create(user, { name: "from tpl", template_id: t.id })
      expect((yield* workflows.get(user, w.id)).workflow_json).toEqual(smoke())
      expect(yield* Effect.flip(workflows.create(user, { name: "x", template_id: theirs.id }))).toMatchObject({ _tag: "TemplateNotFound", message: "Template not found" })
    }).pipe(Effect.provide(layer)))

  it.effect("returns the original workflow for a repeated Idempotency-Key", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      yield* newRunner(user)
      const workflows = yield* WorkflowService
      const a = yield* workflows.create(user, { name: "a", workflow_json: smoke(), idempotency_key: "req-1" })
      const b = yield* workflows.create(user, { name: "b", workflow_json: smoke(), idempotency_key: "req-1" })
      expect(b.id).toBe(a.id)
      expect((yield* workflows.list(user, {})).total).toBe(1)
      const bad = yield* Effect.flip(workflows.create(user, { name: "c", workflow_json: smoke(), idempotency_key: "has space" }))
      expect(bad.message).toContain("Idempotency-Key")
    }).pipe(Effect.provide(layer)))
})

describe("WorkflowService.rerun", () => {
  const { layer } = makeTestLayer()
  const json = { ...smoke({ color: "$text(color)" }), "4": { class_type: "LoadImage", inputs: { image: "$file(photo)" } } }

  const setup = Effect.gen(function*() {
    const user = yield* newUser("pro")
    yield* newRunner(user, ["gpu"])
    const workflows = yield* WorkflowService
    const original = yield* workflows.create(user, { name: "orig", workflow_json: json, tags: "gpu", params: [text("$color", "1"), file("$photo", "p.png", "P")] })
    return { user, workflows, original }
  })

  it.effect("creates a new workflow with the original's name, tags and definition, merging new values over old", () =>
    Effect.gen(function*() {
      const { original, user, workflows } = yield* setup
      const again = yield* workflows.rerun(user, original.id, { params: [text("$color", "2")] })
      expect(again.id).not.toBe(original.id)
      expect([again.name, again.tags, again.status]).toEqual(["orig", ["gpu"], "accepted"])
      const detail = yield* workflows.get(user, again.id)
      expect(detail.workflow_json).toEqual(json)
      expect(detail.workflow_params).toEqual([["$text(color)", "2"], ["$file(photo)", `inputs/${again.id}/photo/p.png`]])
      expect((yield* workflows.get(user, original.id)).workflow_params[0]).toEqual(["$text(color)", "1"])
    }).pipe(Effect.provide(layer)))

  it.effect("asks for a file again once the original's upload is gone", () =>
    Effect.gen(function*() {
      const { original, user, workflows } = yield* setup
      yield* workflows.cancel(user, original.id)
      const err = yield* Effect.flip(workflows.rerun(user, original.id, {}))
      expect(err).toMatchObject({ _tag: "ValidationError", details: [{ field: "$photo" }] })
      const ok = yield* workflows.rerun(user, original.id, { params: [file("$photo", "q.png", "Q")] })
      expect(ok.status).toBe("accepted")
    }).pipe(Effect.provide(layer)))

  it.effect("is 404 for another user's workflow and validates parameters like create", () =>
    Effect.gen(function*() {
      const { original, user, workflows } = yield* setup
      const other = yield* newUser("pro")
      expect(yield* Effect.flip(workflows.rerun(other, original.id, {}))).toMatchObject({ _tag: "WorkflowNotFound" })
      expect(yield* Effect.flip(workflows.rerun(user, crypto.randomUUID(), {}))).toMatchObject({ _tag: "WorkflowNotFound" })
      expect(yield* Effect.flip(workflows.rerun(user, original.id, { params: [text("$nope", "x")] }))).toMatchObject({ _tag: "ValidationError" })
    }).pipe(Effect.provide(layer)))
})

describe("WorkflowService get, list and cancel", () => {
  const { calls, layer } = makeTestLayer()

  it.effect("hides other users' workflows and non-UUID ids as 404", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      yield* newRunner(user)
      const workflows = yield* WorkflowService
      const w = yield* workflows.create(user, { name: "mine", workflow_json: smoke() })
      const other = yield* newUser()
      for (const e of yield* errorsOf([workflows.get(other, w.id), workflows.get(user, "nope"), workflows.cancel(other, w.id), workflows.outputs(other, w.id), workflows.follow(other, w.id)])) {
        expect(e).toMatchObject({ _tag: "WorkflowNotFound", message: "Workflow not found" })
      }
    }).pipe(Effect.provide(layer)))

  it.effect("lists newest first with validated paging and filters", () =>
    Effect.gen(function*() {
      const user = yield* newUser("pro")
      yield* newRunner(user, ["gpu"])
      const workflows = yield* WorkflowService
      const made: Array<string> = []
      for (let i = 0; i < 3; i++) made.push((yield* workflows.create(user, { name: `w${i}`, workflow_json: smoke(), tags: i === 1 ? "gpu" : "" })).id)
      const all = yield* workflows.list(user, {})
      expect(all.items.map((w) => w.id)).toEqual(made.slice().reverse())
      expect((yield* workflows.list(user, { tag: "GPU" })).items.map((w) => w.id)).toEqual([made[1]])
      yield* workflows.cancel(user, made[0]!)
      expect((yield* workflows.list(user, { status: "cancelled" })).total).toBe(1)
      for (const [input, field] of [[{ page: 0 }, "page"], [{ per_page: 0 }, "per_page"], [{ per_page: 101 }, "per_page"], [{ status: "done" }, "status"]] as const) {
        expect(yield* Effect.flip(workflows.list(user, input))).toMatchObject({ _tag: "ValidationError", details: [{ field }] })
      }
    }).pipe(Effect.provide(layer)))

  it.effect("cancels an unfinished workflow once; a finished one is a conflict", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      yield* newRunner(user)
      const workflows = yield* WorkflowService
      const blobs = yield* BlobStore
      const json = { ...smoke(), "4": { class_type: "LoadImage", inputs: { image: "$file(photo)" } } }
      const w = yield* workflows.create(user, { name: "c", workflow_json: json, params: [file("$photo", "p.png", "P")] })
      const cancelled = yield* workflows.cancel(user, w.id)
      expect(cancelled.status).toBe("cancelled")
      expect(cancelled.completed_at).not.toBeNull()
      expect(yield* blobs.get(`inputs/${w.id}/photo/p.png`)).toEqual(Option.none())
      expect(yield* Effect.flip(workflows.cancel(user, w.id))).toMatchObject({ _tag: "Conflict", message: "Workflow is already cancelled" })
    }).pipe(Effect.provide(layer)))

  it.effect("asks the runner to drop a queued prompt when cancelling", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      const runner = yield* newRunner(user)
      const workflows = yield* WorkflowService
      const w = yield* workflows.create(user, { name: "q", workflow_json: smoke() })
      yield* Lifecycle.transition(w.id, [WorkflowTransition.Uploaded()])
      yield* Lifecycle.transition(w.id, [WorkflowTransition.Queued({ prompt_id: w.id, queue_number: 1 })])
      yield* workflows.cancel(user, w.id)
      expect(calls.cancels).toContainEqual({ runner: runner.id, prompt: w.id })
    }).pipe(Effect.provide(layer)))
})

describe("WorkflowService.follow", () => {
  const { layer } = makeTestLayer()

  const collect = (user: User, id: string, last?: number, started?: Deferred.Deferred<void>) =>
    Effect.flatMap(WorkflowService, (s) => s.follow(user, id, last)).pipe(
      Effect.map(Stream.tap(() => started === undefined ? Effect.void : Deferred.succeed(started, undefined))),
      Effect.flatMap(Stream.runCollect),
      Effect.map((events) => events.map((e) => [e.seq, e.type, (e.data as { status?: string }).status ?? null]))
    )

  /** Follows in a fiber, once its first event (the current status) has come. */
  const following = (user: User, id: string, last?: number) =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const fiber = yield* Effect.forkChild(collect(user, id, last, started))
      yield* Deferred.await(started)
      return fiber
    })

  it.live("starts with the current status, follows transitions and ends after done", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      yield* newRunner(user)
      const w = yield* (yield* WorkflowService).create(user, { name: "f", workflow_json: smoke() })
      const fiber = yield* following(user, w.id)
      yield* Lifecycle.transition(w.id, [WorkflowTransition.Uploaded()])
      yield* Lifecycle.transition(w.id, [WorkflowTransition.Queued({ prompt_id: w.id, queue_number: 2 })])
      yield* Lifecycle.transition(w.id, [WorkflowTransition.QueueMoved({ queue_number: 1 })])
      yield* Lifecycle.transition(w.id, [WorkflowTransition.Started({})])
      yield* Lifecycle.transition(w.id, [WorkflowTransition.Completed({})])
      expect(yield* Fiber.join(fiber)).toEqual([
        [1, "status", "accepted"],
        [2, "status", "uploaded"],
        [3, "status", "queued"],
        [4, "queue", null],
        [5, "status", "running"],
        [6, "status", "completed"],
        [7, "done", "completed"]
      ])
    }).pipe(Effect.provide(layer), Effect.timeout("5 seconds")))

  it.live("replays after Last-Event-ID, and gives status then done for a finished workflow", () =>
    Effect.gen(function*() {
      const user = yield* newUser()
      yield* newRunner(user)
      const workflows = yield* WorkflowService
      const w = yield* workflows.create(user, { name: "f", workflow_json: smoke() })
      yield* Lifecycle.transition(w.id, [WorkflowTransition.Uploaded()])
      yield* Lifecycle.transition(w.id, [WorkflowTransition.Queued({ prompt_id: w.id, queue_number: 1 })])
      const fiber = yield* following(user, w.id, 1)
      yield* workflows.cancel(user, w.id)
      expect(yield* Fiber.join(fiber)).toEqual([
        [1, "status", "queued"],
        [2, "status", "uploaded"],
        [3, "status", "queued"],
        [4, "status", "cancelled"],
        [5, "done", "cancelled"]
      ])
      expect(yield* collect(user, w.id)).toEqual([[5, "status", "cancelled"], [5, "done", "cancelled"]])
    }).pipe(Effect.provide(layer), Effect.timeout("5 seconds")))
})

