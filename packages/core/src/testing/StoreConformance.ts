/**
 * The one definition of what a store must do. Every adapter runs these cases against a fresh,
 * empty store. Cases create their own users, so they never see each other's data.
 */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { AccountRepository } from "../ports/AccountRepository.js"
import { ManagedRunnerRepository } from "../ports/ManagedRunnerRepository.js"
import { RunnerRepository } from "../ports/RunnerRepository.js"
import { TemplateRepository } from "../ports/TemplateRepository.js"
import { WorkflowEventBus } from "../ports/WorkflowEvents.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"
import { equal, failure, ok } from "./Assert.js"
import { blobConformanceCases } from "./BlobConformance.js"
import { c, type ConformanceCase } from "./Case.js"
import { capabilityCases } from "./CapabilityCases.js"
import * as F from "./Fixtures.js"
import { retentionCases } from "./RetentionCases.js"
import { runnerTokenCases } from "./RunnerTokenCases.js"
import { webhookCases } from "./WebhookCases.js"
import { dispatchCases, runnerLoadCases, transitionCases, workflowCases } from "./WorkflowCases.js"

export type { ConformanceCase } from "./Case.js"

const ids = (items: ReadonlyArray<{ readonly id: string }>) => items.map((i) => i.id)

const templateCases: ReadonlyArray<ConformanceCase> = [
  c("templates: insert, find, update and delete are scoped to the owner", Effect.gen(function*() {
    const repo = yield* TemplateRepository
    const owner = F.user()
    const other = F.user()
    const t = F.template(owner.id, { body: { "1": { class_type: "X", inputs: { a: [1, 2, 3] } } } })
    yield* repo.insert(t)
    yield* equal(yield* repo.findForUser(owner.id, t.id), Option.some(t), "owner finds it")
    yield* equal(yield* repo.findForUser(other.id, t.id), Option.none(), "another user does not")
    const notFound = yield* failure(repo.update(other.id, t.id, { name: "stolen", updated_at: F.at(4) }), "update by another user")
    yield* equal(notFound._tag, "TemplateNotFound", "update by another user")
    yield* equal(yield* repo.findForUser(owner.id, t.id), Option.some(t), "another user's update wrote nothing")
    yield* equal(yield* repo.delete(other.id, t.id), false, "delete by another user")
    const updated = yield* repo.update(owner.id, t.id, { name: "renamed", updated_at: F.at(5) })
    yield* equal(updated, { ...t, name: "renamed", updated_at: F.at(5) }, "update returns the record as stored")
    yield* equal(yield* repo.findForUser(owner.id, t.id), Option.some(updated), "updated")
    yield* equal(yield* repo.delete(owner.id, t.id), true, "owner deletes")
    yield* equal(yield* repo.findForUser(owner.id, t.id), Option.none(), "gone")
    yield* equal(yield* repo.count(owner.id), 0, "count after delete")
  })),
  c("templates and workflows: JSON comes back with its keys in the order sent", Effect.gen(function*() {
    // Not sorted, and not in the order `jsonb` keeps (shorter keys first): the order a user wrote.
    const body = { "10": { inputs: { width: 512, height: 512, color: 0, a: 1 }, class_type: "EmptyImage" }, "2": { class_type: "SaveImage", inputs: { zeta: 1, images: ["10", 0] } } }
    const sent = JSON.stringify(body)
    const templates = yield* TemplateRepository
    const owner = F.user()
    const t = F.template(owner.id, { body })
    yield* templates.insert(t)
    yield* equal(Option.map(yield* templates.findForUser(owner.id, t.id), (x) => JSON.stringify(x.body)), Option.some(sent), "template body as sent")
    yield* templates.update(owner.id, t.id, { body: { "9": body["2"], "1": body["10"] }, updated_at: F.at(1) })
    yield* equal(
      Option.map(yield* templates.findForUser(owner.id, t.id), (x) => JSON.stringify(x.body)),
      Option.some(JSON.stringify({ "9": body["2"], "1": body["10"] })),
      "updated body as sent"
    )
    const workflows = yield* WorkflowRepository
    const w = F.workflow(owner.id, { workflow_json: body })
    yield* workflows.create(w)
    yield* equal(Option.map(yield* workflows.findForUser(owner.id, w.id), (x) => JSON.stringify(x.workflow_json)), Option.some(sent), "workflow_json as sent")
  })),
  c("templates and workflows: declared model files come back as stored, and a template's are updated", Effect.gen(function*() {
    const checkpoint = { url: "https://models.test/sdxl.safetensors", sha256: "a".repeat(64), folder: "checkpoints" as const, filename: "sdxl.safetensors" }
    const lora = { url: "https://models.test/detail.safetensors", sha256: "b".repeat(64), folder: "loras" as const, filename: "detail.safetensors" }
    const owner = F.user()
    const templates = yield* TemplateRepository
    const t = F.template(owner.id, { models: [checkpoint] })
    yield* templates.insert(t)
    yield* equal(Option.map(yield* templates.findForUser(owner.id, t.id), (x) => x.models), Option.some([checkpoint]), "template models")
    const updated = yield* templates.update(owner.id, t.id, { models: [checkpoint, lora], updated_at: F.at(1) })
    yield* equal(updated.models, [checkpoint, lora], "updated template models")
    const workflows = yield* WorkflowRepository
    const w = F.workflow(owner.id, { models: [lora, checkpoint] })
    const none = F.workflow(owner.id)
    yield* workflows.create(w)
    yield* workflows.create(none)
    yield* equal(Option.map(yield* workflows.findForUser(owner.id, w.id), (x) => x.models), Option.some([lora, checkpoint]), "workflow models")
    yield* equal(Option.map(yield* workflows.findById(w.id), (x) => x.models), Option.some([lora, checkpoint]), "workflow models by id")
    yield* equal(Option.map(yield* workflows.findForUser(owner.id, none.id), (x) => x.models), Option.some([]), "no models")
  })),
  c("templates: list is newest first, paginated, without bodies", Effect.gen(function*() {
    const repo = yield* TemplateRepository
    const owner = F.user()
    const all = Array.from({ length: 13 }, (_, i) => F.template(owner.id, { created_at: F.at(i) }))
    yield* Effect.forEach(F.shuffled(all), (t) => repo.insert(t), { discard: true })
    const p2 = yield* repo.list(owner.id, { page: 2, per_page: 5 })
    yield* equal(ids(p2.items), ids(all.slice().reverse().slice(5, 10)), "page 2")
    yield* equal(p2.total, 13, "total")
    yield* ok(p2.items.every((t) => !("body" in t)), "no body in list items")
    yield* equal(yield* repo.count(owner.id), 13, "count")
  })),
  c("templates: insert respects the limit under concurrency", Effect.gen(function*() {
    const repo = yield* TemplateRepository
    const owner = F.user()
    const results = yield* Effect.forEach(
      Array.from({ length: 8 }, () => F.template(owner.id)),
      (t) => Effect.result(repo.insert(t, 3)),
      { concurrency: "unbounded" }
    )
    yield* equal(results.filter(Result.isSuccess).length, 3, "exactly the limit")
    yield* ok(results.filter(Result.isFailure).every((e) => e.failure._tag === "LimitReached" && e.failure.limit === "templates"), "limit named")
  }))
]

const runnerCases: ReadonlyArray<ConformanceCase> = [
  c("runners: insert, find, update, delete; another user's runner behaves as missing", Effect.gen(function*() {
    const repo = yield* RunnerRepository
    const owner = F.user()
    const other = F.user()
    const r = F.runner(owner.id, { tags: ["gpu"], headers: { "X-Api-Key": "secret" } })
    yield* repo.insert(r)
    yield* equal(yield* repo.findById(r.id), Option.some(r), "findById")
    yield* equal(yield* repo.findForUser(owner.id, r.id), Option.some(r), "owner")
    yield* equal(yield* repo.findForUser(other.id, r.id), Option.none(), "another user")
    const stolen = { status: "disabled", headers: {}, updated_at: F.at(4) } as const
    yield* equal((yield* failure(repo.update(other.id, r.id, stolen), "update by another user"))._tag, "RunnerNotFound", "update by another")
    yield* equal(yield* repo.findById(r.id), Option.some(r), "another user's update wrote nothing")
    yield* equal(yield* repo.delete(other.id, r.id), false, "delete by another user")
    const updated = yield* repo.update(owner.id, r.id, { status: "disabled", tags: ["cpu"], updated_at: F.at(5) })
    yield* equal(updated, { ...r, status: "disabled", tags: ["cpu"], updated_at: F.at(5) }, "update returns the record as stored")
    yield* equal(yield* repo.findById(r.id), Option.some(updated), "updated")
    yield* equal(yield* repo.delete(owner.id, r.id), true, "deleted")
    yield* equal(yield* repo.findById(r.id), Option.none(), "gone")
  })),
  c("runners and templates: concurrent edits of different fields all survive, each answered as stored", Effect.gen(function*() {
    const runners = yield* RunnerRepository
    const templates = yield* TemplateRepository
    const owner = F.user()
    const r = F.runner(owner.id, { tags: ["a"] })
    const t = F.template(owner.id)
    yield* runners.insert(r)
    yield* templates.insert(t)
    const at = F.at(5)
    const body = { "2": { class_type: "SaveImage", inputs: {} } }
    const [answered] = yield* Effect.all([
      runners.update(owner.id, r.id, { name: "renamed", updated_at: at }),
      runners.update(owner.id, r.id, { status: "disabled", updated_at: at }),
      runners.update(owner.id, r.id, { tags: ["b"], updated_at: at }),
      runners.update(owner.id, r.id, { endpoint: "http://10.0.0.9:8188", headers: { "X-Key": "k" }, updated_at: at }),
      templates.update(owner.id, t.id, { name: "renamed", updated_at: at }),
      templates.update(owner.id, t.id, { description: "another", updated_at: at }),
      templates.update(owner.id, t.id, { body, updated_at: at })
    ], { concurrency: "unbounded" })
    yield* equal(answered.name, "renamed", "an update answers its own change")
    const edited = { name: "renamed", status: "disabled", tags: ["b"], endpoint: "http://10.0.0.9:8188", headers: { "X-Key": "k" } }
    yield* equal(yield* runners.findById(r.id), Option.some({ ...r, ...edited, updated_at: at }), "every runner edit")
    yield* equal(yield* templates.findForUser(owner.id, t.id), Option.some({ ...t, name: "renamed", description: "another", body, updated_at: at }), "every template edit")
  })),
  c("runners: list is newest first with status filter and pagination; active ones are listed for scheduling", Effect.gen(function*() {
    const repo = yield* RunnerRepository
    const owner = F.user()
    const all = Array.from({ length: 7 }, (_, i) => F.runner(owner.id, { status: i % 2 === 0 ? "active" : "disabled", created_at: F.at(i) }))
    yield* Effect.forEach(F.shuffled(all), (r) => repo.insert(r), { discard: true })
    const newest = all.slice().reverse()
    const page = yield* repo.list(owner.id, { page: 1, per_page: 3 })
    yield* equal([ids(page.items), page.total], [ids(newest.slice(0, 3)), 7], "page 1")
    const active = yield* repo.list(owner.id, { page: 1, per_page: 10, status: "active" })
    yield* equal([ids(active.items), active.total], [ids(newest.filter((r) => r.status === "active")), 4], "status=active")
    yield* equal(new Set(ids(yield* repo.listActiveForUser(owner.id))), new Set(ids(all.filter((r) => r.status === "active"))), "listActiveForUser")
    yield* equal(yield* repo.count(owner.id), 7, "count")
  })),
  c("runners: insert respects the limit under concurrency", Effect.gen(function*() {
    const repo = yield* RunnerRepository
    const owner = F.user()
    const results = yield* Effect.forEach(
      Array.from({ length: 6 }, () => F.runner(owner.id)),
      (r) => Effect.result(repo.insert(r, 2)),
      { concurrency: "unbounded" }
    )
    yield* equal(results.filter(Result.isSuccess).length, 2, "exactly the limit")
    yield* ok(results.filter(Result.isFailure).every((e) => e.failure._tag === "LimitReached" && e.failure.limit === "runners"), "limit named")
  })),
  c("runners of both kinds keep what their ComfyUI answered; a probe's change is stored without touching updated_at", Effect.gen(function*() {
    const runners = yield* RunnerRepository
    const managed = yield* ManagedRunnerRepository
    const seen = { version: "0.3.64", devices: [{ name: "cuda:0 NVIDIA L4 : cudaMallocAsync", type: "cuda", index: 0, vram_total: 23_580_639_232 }], jobs_api: false }
    const upgraded = { version: "0.38.1", devices: seen.devices, jobs_api: true }
    const owner = F.user()
    const r = F.runner(owner.id, { comfyui: seen })
    const m = F.managedRunner({ comfyui: null })
    yield* runners.insert(r)
    yield* managed.insert(m)
    yield* equal(Option.map(yield* runners.findById(r.id), (x) => x.comfyui), Option.some(seen), "inserted with it")
    yield* equal(Option.map(yield* managed.findById(m.id), (x) => x.comfyui), Option.some(null), "null until probed")
    yield* equal(yield* runners.setComfyUI(r.id, upgraded), true, "user runner found")
    yield* equal(yield* managed.setComfyUI(m.id, seen), true, "managed runner found")
    yield* equal(yield* runners.findById(r.id), Option.some({ ...r, comfyui: upgraded }), "user runner: only comfyui changed")
    yield* equal(yield* managed.findById(m.id), Option.some({ ...m, comfyui: seen }), "managed runner: only comfyui changed")
    yield* equal(yield* runners.setComfyUI(F.uuid(), seen), false, "a missing runner")
    yield* equal(yield* managed.setComfyUI(F.uuid(), seen), false, "a missing managed runner")
    yield* equal(yield* runners.setComfyUI("not-a-uuid", seen), false, "not an id")
    // Managed runners are everyone's: the other cases list them all.
    yield* managed.delete(m.id)
  })),
  c("managed runners: insert, find, update, delete; lists filter by type and status", Effect.gen(function*() {
    const repo = yield* ManagedRunnerRepository
    const pro = F.managedRunner({ runner_type: "pro", created_at: F.at(1) })
    const plus = F.managedRunner({ runner_type: "plus", created_at: F.at(2) })
    const off = F.managedRunner({ runner_type: "pro", status: "disabled", created_at: F.at(3) })
    yield* Effect.forEach([plus, off, pro], (r) => repo.insert(r), { discard: true })
    yield* equal(yield* repo.findById(pro.id), Option.some(pro), "findById")
    const proActive = yield* repo.list({ page: 1, per_page: 10, types: ["pro"], status: "active" })
    yield* equal([ids(proActive.items), proActive.total], [[pro.id], 1], "pro, active")
    const plusTier = yield* repo.list({ page: 1, per_page: 10, types: ["pro", "plus"], status: "active" })
    yield* equal(ids(plusTier.items), [plus.id, pro.id], "pro and plus, newest first")
    const everything = yield* repo.list({ page: 1, per_page: 2 })
    yield* equal([ids(everything.items), everything.total], [[off.id, plus.id], 3], "all, paginated")
    yield* equal(new Set(ids(yield* repo.listActive(["pro", "plus"]))), new Set([pro.id, plus.id]), "listActive")
    yield* repo.update(off.id, { status: "active", updated_at: F.at(4) })
    yield* equal(ids(yield* repo.listActive(["pro"])).sort(), [pro.id, off.id].sort(), "enabled runner is listed")
    yield* equal(yield* repo.delete(off.id), true, "deleted")
    yield* equal(yield* repo.delete(off.id), false, "already gone")
    yield* equal((yield* failure(repo.update(off.id, { updated_at: F.at(5) }), "update of a deleted runner"))._tag, "ManagedRunnerNotFound", "update after delete")
  }))
]

const accountCases: ReadonlyArray<ConformanceCase> = [
  c("accounts: users are stored, found and updated", Effect.gen(function*() {
    const repo = yield* AccountRepository
    const u = F.user({ email: "a@example.com", tier: "pro" })
    yield* repo.insertUser(u)
    yield* equal(yield* repo.findUser(u.id), Option.some(u), "findUser")
    const upgraded = { ...u, tier: "plus", updated_at: F.at(9) } as const
    yield* equal(yield* repo.updateUser(u.id, { tier: "plus", updated_at: F.at(9) }), upgraded, "update returns the user as stored")
    yield* equal(yield* repo.findUser(u.id), Option.some(upgraded), "updated tier")
    yield* equal((yield* failure(repo.updateUser(F.uuid(), { tier: "pro", updated_at: F.at(9) }), "unknown user"))._tag, "UserNotFound", "unknown user")
  })),
  c("accounts: users are listed newest first, paged, optionally of one tier", Effect.gen(function*() {
    const repo = yield* AccountRepository
    // Later than any other case's users, so they are the newest whatever else the store holds.
    const a = F.user({ tier: "free", created_at: F.at(10_000_001) })
    const b = F.user({ tier: "pro", created_at: F.at(10_000_002) })
    const c3 = F.user({ tier: "free", created_at: F.at(10_000_003) })
    for (const u of [b, a, c3]) yield* repo.insertUser(u)
    yield* equal(ids((yield* repo.listUsers({ page: 1, per_page: 2 })).items), [c3.id, b.id], "newest first")
    yield* equal(ids((yield* repo.listUsers({ page: 2, per_page: 1 })).items), [b.id], "second page")
    const free = yield* repo.listUsers({ page: 1, per_page: 2, tier: "free" })
    yield* equal(ids(free.items), [c3.id, a.id], "of one tier")
    const all = yield* repo.listUsers({ page: 1, per_page: 1 })
    yield* equal(all.total >= free.total + 1 && free.total >= 2, true, "totals count every page")
    yield* equal((yield* repo.listUsers({ page: 1, per_page: 100, tier: "free" })).items.every((u) => u.tier === "free"), true, "only that tier")
  })),
  c("accounts: tokens are found by hash with their user, listed newest first, revoked", Effect.gen(function*() {
    const repo = yield* AccountRepository
    const u = F.user()
    yield* repo.insertUser(u)
    const t1 = F.token(u.id, { created_at: F.at(1), expires_at: F.at(100) })
    const t2 = F.token(u.id, { created_at: F.at(2) })
    yield* repo.insertToken(t1)
    yield* repo.insertToken(t2)
    yield* equal(yield* repo.findTokenByHash(t1.token_hash), Option.some({ token: t1, user: u }), "by hash")
    yield* equal(yield* repo.findTokenByHash("0".repeat(64)), Option.none(), "unknown hash")
    yield* equal(ids(yield* repo.listTokens(u.id)), [t2.id, t1.id], "newest first")
    yield* equal(yield* repo.findToken(t2.id), Option.some(t2), "findToken")
    yield* equal(yield* repo.deleteToken(t1.id), true, "revoked")
    yield* equal(yield* repo.findTokenByHash(t1.token_hash), Option.none(), "revoked token no longer found")
    yield* equal(yield* repo.deleteToken(t1.id), false, "already revoked")
  })),
  c("accounts: token use is written in batches and never moves backwards", Effect.gen(function*() {
    const repo = yield* AccountRepository
    const u = F.user()
    yield* repo.insertUser(u)
    const a = F.token(u.id)
    const b = F.token(u.id)
    yield* repo.insertToken(a)
    yield* repo.insertToken(b)
    yield* repo.recordTokenUse([{ id: a.id, at: F.at(10) }, { id: b.id, at: F.at(11) }, { id: F.uuid(), at: F.at(12) }])
    yield* repo.recordTokenUse([{ id: a.id, at: F.at(5) }])
    const used = (t: typeof a) => Effect.map(repo.findToken(t.id), Option.flatMap((x) => Option.fromNullishOr(x.last_used_at)))
    yield* equal(yield* used(a), Option.some(F.at(10)), "a keeps the later time")
    yield* equal(yield* used(b), Option.some(F.at(11)), "b")
  }))
]

const eventCases: ReadonlyArray<ConformanceCase> = [
  c("events: sequence numbers start at 1 and grow by one per workflow", Effect.gen(function*() {
    const bus = yield* WorkflowEventBus
    const w1 = F.uuid()
    const w2 = F.uuid()
    yield* equal(yield* bus.lastSeq(w1), 0, "empty log")
    const a = yield* bus.publish(w1, [{ type: "status", data: { status: "accepted" } }, { type: "queue", data: { queue_number: 2 } }])
    const b = yield* bus.publish(w2, [{ type: "status", data: { status: "accepted" } }])
    const c2 = yield* bus.publish(w1, [{ type: "progress", data: { node: "3", value: 1, max: 20 } }])
    yield* equal([...a, ...c2].map((e) => e.seq), [1, 2, 3], "w1 sequence")
    yield* equal(b.map((e) => e.seq), [1], "w2 has its own sequence")
    yield* equal(yield* bus.lastSeq(w1), 3, "lastSeq")
    const read = yield* bus.read(w1, 1, 10)
    yield* equal(read.map((e) => [e.seq, e.type, e.data]), [[2, "queue", { queue_number: 2 }], [3, "progress", { node: "3", value: 1, max: 20 }]], "read after 1")
    yield* equal((yield* bus.read(w1, 0, 2)).map((e) => e.seq), [1, 2], "read with a limit")
    yield* equal(yield* bus.read(w1, 3, 10), [], "nothing after the last")
  })),
  c("events: concurrent publishes to one workflow get unique, gapless sequence numbers", Effect.gen(function*() {
    const bus = yield* WorkflowEventBus
    const w = F.uuid()
    yield* Effect.forEach(Array.from({ length: 30 }, (_, i) => i), (i) =>
      bus.publish(w, [{ type: "progress", data: { value: i } }]), { concurrency: "unbounded", discard: true })
    const all = yield* bus.read(w, 0, 100)
    yield* equal(all.map((e) => e.seq), Array.from({ length: 30 }, (_, i) => i + 1), "1..30")
    yield* equal(new Set(all.map((e) => (e.data as { value: number }).value)).size, 30, "every event kept")
  })),
  c("events: subscribers replay from a sequence number, then get live events in order", Effect.gen(function*() {
    const bus = yield* WorkflowEventBus
    const w = F.uuid()
    yield* bus.publish(w, [{ type: "status", data: 1 }, { type: "status", data: 2 }, { type: "status", data: 3 }])
    const fromOne = yield* bus.subscribe(w, 1).pipe(Stream.take(5), Stream.runCollect, Effect.forkChild)
    const fromZero = yield* bus.subscribe(w, 0).pipe(Stream.take(6), Stream.runCollect, Effect.forkChild)
    yield* Effect.sleep("20 millis")
    yield* bus.publish(w, [{ type: "progress", data: 4 }])
    yield* bus.publish(w, [{ type: "done", data: 5 }])
    yield* bus.publish(w, [{ type: "status", data: 6 }])
    const one = (yield* Fiber.join(fromOne)).map((e) => e.seq)
    const zero = (yield* Fiber.join(fromZero)).map((e) => e.seq)
    yield* equal(one, [2, 3, 4, 5, 6], "replay after 1, then live")
    yield* equal(zero, [1, 2, 3, 4, 5, 6], "a second subscriber gets every event too")
  }).pipe(Effect.timeout("10 seconds"))),
  c("events: a subscriber that starts level with the log waits for the next event", Effect.gen(function*() {
    const bus = yield* WorkflowEventBus
    const w = F.uuid()
    yield* bus.publish(w, [{ type: "status", data: 1 }])
    const next = yield* bus.subscribe(w, 1).pipe(Stream.runHead, Effect.forkChild)
    yield* Effect.sleep("20 millis")
    yield* equal(next.pollUnsafe() === undefined, true, "nothing yet")
    yield* bus.publish(w, [{ type: "executing", data: { node: "3" } }])
    const got = yield* Fiber.join(next)
    yield* equal(Option.map(got, (e) => [e.seq, e.type]), Option.some([2, "executing"]), "the next event")
  }).pipe(Effect.timeout("10 seconds")))
]

/** Every case a store must pass. */
export const storeConformanceCases: ReadonlyArray<ConformanceCase> = [
  ...workflowCases,
  ...transitionCases,
  ...templateCases,
  ...runnerCases,
  ...runnerTokenCases,
  ...accountCases,
  ...eventCases,
  ...blobConformanceCases(),
  ...dispatchCases,
  ...runnerLoadCases,
  ...capabilityCases,
  ...webhookCases,
  ...retentionCases
]

