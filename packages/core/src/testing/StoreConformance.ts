/**
 * The one definition of what a store must do. Every adapter runs these cases against a fresh,
 * empty store. Cases create their own users, so they never see each other's data.
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { AccountRepository } from "../accounts/AccountRepository.js"
import { BlobStore } from "../shared/BlobStore.js"
import { DispatchQueue, RunnerOwnership } from "../dispatch/Dispatch.js"
import { ManagedRunnerRepository } from "../runners/ManagedRunnerRepository.js"
import { RunnerRepository } from "../runners/RunnerRepository.js"
import { TemplateRepository } from "../templates/TemplateRepository.js"
import type { StoreServices } from "../UseCases.js"
import type { Workflow } from "../workflows/Workflow.js"
import { WorkflowEventBus } from "../workflows/WorkflowEvents.js"
import { WorkflowRepository } from "../workflows/WorkflowRepository.js"
import { equal, failure, ok } from "./Assert.js"
import * as F from "./Fixtures.js"

/** One conformance case. */
export interface ConformanceCase {
  readonly name: string
  readonly run: Effect.Effect<void, unknown, StoreServices>
}

const c = (name: string, run: Effect.Effect<void, unknown, StoreServices>): ConformanceCase => ({ name, run })

const insertAll = (workflows: ReadonlyArray<Workflow>) =>
  Effect.flatMap(WorkflowRepository, (repo) => Effect.forEach(workflows, (w) => repo.insert(w), { discard: true }))

const ids = (items: ReadonlyArray<{ readonly id: string }>) => items.map((i) => i.id)

const workflowCases: ReadonlyArray<ConformanceCase> = [
  c("workflows: stores every field and reads it back unchanged", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const w = F.workflow(owner.id, {
      name: "portrait",
      status: "failed",
      tags: ["gpu", "sdxl"],
      started_at: F.at(1),
      completed_at: F.at(2),
      workflow_json: { "3": { class_type: "KSampler", inputs: { seed: 5, model: ["4", 0], text: "$text(prompt)" } } },
      workflow_params: [["$text(prompt)", "a cat"], ["$file(img)", "inputs/x/img/cat.png"]],
      prompt_id: "0b3c1e9e-7f6a-4c1e-9a55-5d2b0c8f1a11",
      queue_number: 3,
      error_node: "3",
      exception_type: "torch.OutOfMemoryError",
      exception_message: "out of memory",
      idempotency_key: "key-1",
      dispatch_attempts: 2,
      submitted_at: F.at(1)
    })
    yield* repo.insert(w)
    yield* equal(yield* repo.findById(w.id), Option.some(w), "findById")
    yield* equal(yield* repo.findForUser(owner.id, w.id), Option.some(w), "findForUser by the owner")
  })),
  c("workflows: another user's id behaves as missing", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const other = F.user()
    const w = F.workflow(owner.id)
    yield* repo.insert(w)
    yield* equal(yield* repo.findForUser(other.id, w.id), Option.none(), "findForUser by another user")
    yield* equal((yield* repo.list(other.id, { page: 1, per_page: 10 })).total, 0, "another user's list")
    yield* equal(yield* repo.history(other.id, { kind: "user", id: w.user_runner_id! }, 10), [], "another user's history")
    yield* equal(yield* repo.findById(F.uuid()), Option.none(), "unknown id")
  })),
  c("workflows: lists newest first with page, per_page and total", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const all = Array.from({ length: 25 }, (_, i) => F.workflow(owner.id, { name: `w${i}`, created_at: F.at(i), updated_at: F.at(i) }))
    yield* insertAll(F.shuffled(all))
    const newest = all.slice().reverse()
    const p1 = yield* repo.list(owner.id, { page: 1, per_page: 10 })
    yield* equal(ids(p1.items), ids(newest.slice(0, 10)), "page 1")
    yield* equal(p1.total, 25, "total")
    const p3 = yield* repo.list(owner.id, { page: 3, per_page: 10 })
    yield* equal(ids(p3.items), ids(newest.slice(20)), "page 3")
    const p4 = yield* repo.list(owner.id, { page: 4, per_page: 10 })
    yield* equal([p4.items.length, p4.total], [0, 25], "past the last page")
    const all100 = yield* repo.list(owner.id, { page: 1, per_page: 100 })
    yield* equal(ids(all100.items), ids(newest), "per_page 100")
    yield* equal(Object.keys(p1.items[0]!).sort(), ["completed_at", "created_at", "id", "name", "started_at", "status", "tags", "updated_at"], "list items are summaries")
  })),
  c("workflows: ties on created_at keep a stable order", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const same = Array.from({ length: 6 }, () => F.workflow(owner.id, { created_at: F.at(5) }))
    yield* insertAll(same)
    const a = yield* repo.list(owner.id, { page: 1, per_page: 3 })
    const b = yield* repo.list(owner.id, { page: 2, per_page: 3 })
    yield* equal(new Set([...ids(a.items), ...ids(b.items)]).size, 6, "two pages cover all six without repeats")
  })),
  c("workflows: filters the list by status and by tag", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const done = F.workflow(owner.id, { status: "completed", tags: ["gpu"], created_at: F.at(1) })
    const running = F.workflow(owner.id, { status: "running", tags: ["gpu", "xl"], created_at: F.at(2) })
    const queued = F.workflow(owner.id, { status: "queued", tags: ["cpu"], created_at: F.at(3) })
    yield* insertAll([done, running, queued])
    const byStatus = yield* repo.list(owner.id, { page: 1, per_page: 10, status: "running" })
    yield* equal([ids(byStatus.items), byStatus.total], [[running.id], 1], "status=running")
    const byTag = yield* repo.list(owner.id, { page: 1, per_page: 10, tag: "gpu" })
    yield* equal([ids(byTag.items), byTag.total], [[running.id, done.id], 2], "tag=gpu")
    const both = yield* repo.list(owner.id, { page: 1, per_page: 10, tag: "gpu", status: "completed" })
    yield* equal(ids(both.items), [done.id], "status and tag")
  })),
  c("workflows: runner history is newest first, at most the limit, that runner and that user only", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const other = F.user()
    const runnerId = F.uuid()
    const managedId = F.uuid()
    const onRunner = Array.from({ length: 12 }, (_, i) =>
      F.workflow(owner.id, { user_runner_id: runnerId as Workflow["user_runner_id"], created_at: F.at(i) }))
    const onManaged = F.workflow(owner.id, {
      user_runner_id: null,
      managed_runner_id: managedId as Workflow["managed_runner_id"],
      created_at: F.at(20)
    })
    const othersOnManaged = F.workflow(other.id, {
      user_runner_id: null,
      managed_runner_id: managedId as Workflow["managed_runner_id"],
      created_at: F.at(21)
    })
    yield* insertAll([...F.shuffled(onRunner), onManaged, othersOnManaged, F.workflow(owner.id, { created_at: F.at(30) })])
    const history = yield* repo.history(owner.id, { kind: "user", id: runnerId as never }, 10)
    yield* equal(ids(history), ids(onRunner.slice().reverse().slice(0, 10)), "user runner history")
    const managed = yield* repo.history(owner.id, { kind: "managed", id: managedId as never }, 10)
    yield* equal(ids(managed), [onManaged.id], "managed runner history holds only the caller's workflows")
  })),
  c("workflows: counts unfinished ones and those created since a time", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    yield* insertAll([
      F.workflow(owner.id, { status: "accepted", created_at: F.at(1) }),
      F.workflow(owner.id, { status: "running", created_at: F.at(2) }),
      F.workflow(owner.id, { status: "completed", created_at: F.at(3) }),
      F.workflow(owner.id, { status: "cancelled", created_at: F.at(4) })
    ])
    yield* equal(yield* repo.countActive(owner.id), 2, "countActive")
    yield* equal(yield* repo.countCreatedSince(owner.id, F.at(2)), 3, "countCreatedSince (inclusive)")
    yield* equal(yield* repo.countCreatedSince(owner.id, F.at(5)), 0, "none since later")
    yield* equal(yield* repo.countCreatedSince(owner.id, F.at(0)), 4, "all since earlier")
  })),
  c("workflows: counts in-flight work per runner, and follows updates", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const r1 = F.uuid() as Workflow["user_runner_id"]
    const r2 = F.uuid() as Workflow["managed_runner_id"]
    const a = F.workflow(owner.id, { user_runner_id: r1, status: "queued" })
    const b = F.workflow(owner.id, { user_runner_id: r1, status: "running" })
    const done = F.workflow(owner.id, { user_runner_id: r1, status: "completed" })
    const m = F.workflow(owner.id, { user_runner_id: null, managed_runner_id: r2, status: "accepted" })
    yield* insertAll([a, b, done, m])
    const counts = yield* repo.countInFlight([r1!, r2!, F.uuid()])
    yield* equal([counts.get(r1!), counts.get(r2!)], [2, 1], "in flight before")
    yield* repo.update(a.id, (w) => Either.right({ ...w, status: "completed" as const }))
    yield* repo.update(m.id, (w) => Either.right({ ...w, managed_runner_id: null, user_runner_id: r1 }))
    const after = yield* repo.countInFlight([r1!, r2!])
    yield* equal([after.get(r1!) ?? 0, after.get(r2!) ?? 0], [2, 0], "in flight after finishing one and moving one")
  })),
  c("workflows: concurrent updates of one workflow lose nothing", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const w = F.workflow(F.user().id)
    yield* repo.insert(w)
    yield* Effect.forEach(
      Array.from({ length: 40 }, (_, i) => i),
      (i) => repo.update(w.id, (cur) => Either.right({ ...cur, workflow_params: [...cur.workflow_params, [`$text(p${i})`, String(i)] as const] })),
      { concurrency: "unbounded", discard: true }
    )
    const final = Option.getOrThrow(yield* repo.findById(w.id))
    yield* equal(final.workflow_params.length, 40, "every concurrent update kept")
    yield* equal(new Set(final.workflow_params.map(([k]) => k)).size, 40, "no update applied twice")
  })),
  c("workflows: an update that returns an error writes nothing; a missing id is NotFound", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const w = F.workflow(F.user().id)
    yield* repo.insert(w)
    const err = yield* failure(repo.update(w.id, () => Either.left("nope" as const)), "failing update")
    yield* equal(err, "nope", "the function's error")
    yield* equal(yield* repo.findById(w.id), Option.some(w), "unchanged after a failed update")
    const missing = yield* failure(repo.update(F.uuid(), (x) => Either.right(x)), "update of an unknown id")
    yield* equal((missing as { _tag: string })._tag, "NotFound", "unknown id")
  })),
  c("workflows: insert checks the active and daily limits atomically", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const limits = { active_workflows: 5, workflows_per_day: 100, day_start: F.at(0) }
    const results = yield* Effect.forEach(
      Array.from({ length: 12 }, (_, i) => F.workflow(owner.id, { created_at: F.at(i) })),
      (w) => Effect.either(repo.insert(w, { limits })),
      { concurrency: "unbounded" }
    )
    yield* equal(results.filter(Either.isRight).length, 5, "exactly the limit succeeds")
    const errors = results.filter(Either.isLeft).map((e) => e.left)
    yield* ok(errors.every((e) => e._tag === "LimitReached" && e.limit === "active_workflows"), "the rest name active_workflows")
    const daily = { active_workflows: 1000, workflows_per_day: 7, day_start: F.at(0) }
    const more = yield* Effect.forEach(
      Array.from({ length: 5 }, (_, i) => F.workflow(owner.id, { status: "completed", created_at: F.at(20 + i) })),
      (w) => Effect.either(repo.insert(w, { limits: daily })),
      { concurrency: "unbounded" }
    )
    yield* equal(more.filter(Either.isRight).length, 2, "5 of 7 used: two more fit the daily limit")
    yield* ok(more.filter(Either.isLeft).every((e) => e.left._tag === "LimitReached" && e.left.limit === "workflows_per_day"), "daily limit named")
    const yesterday = { active_workflows: 1000, workflows_per_day: 7, day_start: F.at(100) }
    yield* repo.insert(F.workflow(owner.id, { status: "completed", created_at: F.at(101) }), { limits: yesterday })
  })),
  c("workflows: an idempotency key returns the first workflow within the window and is released after it", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const first = F.workflow(owner.id, { idempotency_key: "abc", created_at: F.at(10) })
    yield* repo.insert(first, { idempotency_since: F.at(0) })
    const dup = yield* failure(repo.insert(F.workflow(owner.id, { idempotency_key: "abc", created_at: F.at(11) }), { idempotency_since: F.at(0) }), "duplicate key")
    yield* equal(dup._tag === "DuplicateIdempotencyKey" ? dup.existing.id : dup._tag, first.id, "duplicate returns the first")
    yield* equal(Option.map(yield* repo.findByIdempotencyKey(owner.id, "abc", F.at(0)), (w) => w.id), Option.some(first.id), "findByIdempotencyKey")
    yield* equal(yield* repo.findByIdempotencyKey(owner.id, "abc", F.at(11)), Option.none(), "older than the window")
    yield* equal(yield* repo.findByIdempotencyKey(F.user().id, "abc", F.at(0)), Option.none(), "keys are per user")
    yield* repo.insert(F.workflow(F.user().id, { idempotency_key: "abc" }), { idempotency_since: F.at(0) })
    const later = F.workflow(owner.id, { idempotency_key: "abc", created_at: F.at(2000) })
    yield* repo.insert(later, { idempotency_since: F.at(1000) })
    yield* equal(Option.map(yield* repo.findByIdempotencyKey(owner.id, "abc", F.at(1000)), (w) => w.id), Option.some(later.id), "a stale key is reused")
  })),
  c("workflows: listByStatus gives the asked statuses, oldest first, up to the limit", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const ws = [
      F.workflow(owner.id, { status: "accepted", created_at: F.at(-50) }),
      F.workflow(owner.id, { status: "queued", created_at: F.at(-60) }),
      F.workflow(owner.id, { status: "completed", created_at: F.at(-70) }),
      F.workflow(owner.id, { status: "accepted", created_at: F.at(-40) })
    ]
    yield* insertAll(ws)
    const found = (yield* repo.listByStatus(["accepted", "queued"], 1000)).filter((w) => w.user_id === owner.id)
    yield* equal(ids(found), [ws[1]!.id, ws[0]!.id, ws[3]!.id], "accepted and queued, oldest first")
    const one = yield* repo.listByStatus(["accepted", "queued"], 1)
    yield* equal(one.length, 1, "limit")
  })),
  c("workflows: outputs are listed in the order they were added, per workflow", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const w = F.workflow(F.user().id)
    yield* repo.insert(w)
    const output = (i: number) => ({
      id: F.uuid() as never,
      workflow_id: w.id,
      node_id: "9",
      filename: `run_0000${i}_.png`,
      subfolder: "wes",
      type: "output",
      content_type: "image/png",
      size: 100 + i,
      blob_key: `outputs/${w.id}/${i}/run.png`,
      created_at: F.at(i)
    })
    const outs = [output(1), output(2), output(3)]
    yield* repo.addOutputs(outs.slice(0, 2))
    yield* repo.addOutputs(outs.slice(2))
    yield* equal(yield* repo.listOutputs(w.id), outs, "outputs in order")
    yield* equal(yield* repo.listOutputs(F.uuid()), [], "no outputs for another workflow")
  }))
]

const templateCases: ReadonlyArray<ConformanceCase> = [
  c("templates: insert, find, update and delete are scoped to the owner", Effect.gen(function*() {
    const repo = yield* TemplateRepository
    const owner = F.user()
    const other = F.user()
    const t = F.template(owner.id, { body: { "1": { class_type: "X", inputs: { a: [1, 2, 3] } } } })
    yield* repo.insert(t)
    yield* equal(yield* repo.findForUser(owner.id, t.id), Option.some(t), "owner finds it")
    yield* equal(yield* repo.findForUser(other.id, t.id), Option.none(), "another user does not")
    const notFound = yield* failure(repo.update(other.id, t.id, (x) => ({ ...x, name: "stolen" })), "update by another user")
    yield* equal(notFound._tag, "NotFound", "update by another user")
    yield* equal(yield* repo.delete(other.id, t.id), false, "delete by another user")
    const updated = yield* repo.update(owner.id, t.id, (x) => ({ ...x, name: "renamed", updated_at: F.at(5) }))
    yield* equal(Option.map(yield* repo.findForUser(owner.id, t.id), (x) => [x.name, x.body]), Option.some(["renamed", t.body]), "updated")
    yield* equal(updated.name, "renamed", "update returns the new record")
    yield* equal(yield* repo.delete(owner.id, t.id), true, "owner deletes")
    yield* equal(yield* repo.findForUser(owner.id, t.id), Option.none(), "gone")
    yield* equal(yield* repo.count(owner.id), 0, "count after delete")
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
      (t) => Effect.either(repo.insert(t, 3)),
      { concurrency: "unbounded" }
    )
    yield* equal(results.filter(Either.isRight).length, 3, "exactly the limit")
    yield* ok(results.filter(Either.isLeft).every((e) => e.left._tag === "LimitReached" && e.left.limit === "templates"), "limit named")
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
    yield* equal((yield* failure(repo.update(other.id, r.id, (x) => x), "update by another user"))._tag, "NotFound", "update by another")
    yield* equal(yield* repo.delete(other.id, r.id), false, "delete by another user")
    yield* repo.update(owner.id, r.id, (x) => ({ ...x, status: "disabled", tags: ["cpu"] }))
    yield* equal(Option.map(yield* repo.findById(r.id), (x) => [x.status, x.tags]), Option.some(["disabled", ["cpu"]]), "updated")
    yield* equal(yield* repo.delete(owner.id, r.id), true, "deleted")
    yield* equal(yield* repo.findById(r.id), Option.none(), "gone")
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
      (r) => Effect.either(repo.insert(r, 2)),
      { concurrency: "unbounded" }
    )
    yield* equal(results.filter(Either.isRight).length, 2, "exactly the limit")
    yield* ok(results.filter(Either.isLeft).every((e) => e.left._tag === "LimitReached" && e.left.limit === "runners"), "limit named")
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
    yield* repo.update(off.id, (r) => ({ ...r, status: "active" }))
    yield* equal(ids(yield* repo.listActive(["pro"])).sort(), [pro.id, off.id].sort(), "enabled runner is listed")
    yield* equal(yield* repo.delete(off.id), true, "deleted")
    yield* equal(yield* repo.delete(off.id), false, "already gone")
    yield* equal((yield* failure(repo.update(off.id, (r) => r), "update of a deleted runner"))._tag, "NotFound", "update after delete")
  }))
]

const accountCases: ReadonlyArray<ConformanceCase> = [
  c("accounts: users are stored, found and updated", Effect.gen(function*() {
    const repo = yield* AccountRepository
    const u = F.user({ email: "a@example.com", tier: "pro" })
    yield* repo.insertUser(u)
    yield* equal(yield* repo.findUser(u.id), Option.some(u), "findUser")
    yield* repo.updateUser(u.id, (x) => ({ ...x, tier: "plus", updated_at: F.at(9) }))
    yield* equal(Option.map(yield* repo.findUser(u.id), (x) => x.tier), Option.some("plus"), "updated tier")
    yield* equal((yield* failure(repo.updateUser(F.uuid(), (x) => x), "unknown user"))._tag, "NotFound", "unknown user")
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
    const used = (t: typeof a) => Effect.map(repo.findToken(t.id), Option.flatMap((x) => Option.fromNullable(x.last_used_at)))
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
    const fromOne = yield* bus.subscribe(w, 1).pipe(Stream.take(5), Stream.runCollect, Effect.fork)
    const fromZero = yield* bus.subscribe(w, 0).pipe(Stream.take(6), Stream.runCollect, Effect.fork)
    yield* Effect.sleep("20 millis")
    yield* bus.publish(w, [{ type: "progress", data: 4 }])
    yield* bus.publish(w, [{ type: "done", data: 5 }])
    yield* bus.publish(w, [{ type: "status", data: 6 }])
    const one = Chunk.toReadonlyArray(yield* Fiber.join(fromOne)).map((e) => e.seq)
    const zero = Chunk.toReadonlyArray(yield* Fiber.join(fromZero)).map((e) => e.seq)
    yield* equal(one, [2, 3, 4, 5, 6], "replay after 1, then live")
    yield* equal(zero, [1, 2, 3, 4, 5, 6], "a second subscriber gets every event too")
  }).pipe(Effect.timeout("10 seconds"))),
  c("events: a subscriber that starts level with the log waits for the next event", Effect.gen(function*() {
    const bus = yield* WorkflowEventBus
    const w = F.uuid()
    yield* bus.publish(w, [{ type: "status", data: 1 }])
    const next = yield* bus.subscribe(w, 1).pipe(Stream.runHead, Effect.fork)
    yield* Effect.sleep("20 millis")
    yield* equal(Option.isNone(yield* Fiber.poll(next)), true, "nothing yet")
    yield* bus.publish(w, [{ type: "executing", data: { node: "3" } }])
    const got = yield* Fiber.join(next)
    yield* equal(Option.map(got, (e) => [e.seq, e.type]), Option.some([2, "executing"]), "the next event")
  }).pipe(Effect.timeout("10 seconds")))
]

const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff)

const blobCases: ReadonlyArray<ConformanceCase> = [
  c("blobs: put streams bytes in; get streams the same bytes out with size and content type", Effect.gen(function*() {
    const blobs = yield* BlobStore
    const key = `inputs/${F.uuid()}/image/cat.png`
    const parts = [bytes(70_000, 1), bytes(3, 2), bytes(100_000, 3)]
    const size = yield* blobs.put(key, Stream.fromIterable(parts), "image/png")
    yield* equal(size, 170_003, "bytes written")
    const blob = Option.getOrThrow(yield* blobs.get(key))
    yield* equal([blob.size, blob.content_type], [170_003, "image/png"], "size and type")
    const back = Chunk.toReadonlyArray(yield* Stream.runCollect(blob.stream))
    const joined = new Uint8Array(back.reduce((n, c) => n + c.length, 0))
    let offset = 0
    for (const c of back) {
      joined.set(c, offset)
      offset += c.length
    }
    const expected = new Uint8Array(170_003)
    expected.set(parts[0]!, 0)
    expected.set(parts[1]!, 70_000)
    expected.set(parts[2]!, 70_003)
    yield* equal(joined, expected, "same bytes")
  })),
  c("blobs: copy, delete, and missing keys", Effect.gen(function*() {
    const blobs = yield* BlobStore
    const a = `inputs/${F.uuid()}/p/a.bin`
    const b = `inputs/${F.uuid()}/p/b.bin`
    yield* blobs.put(a, Stream.make(bytes(10, 7)), "application/octet-stream")
    yield* equal(yield* blobs.copy(a, b), true, "copied")
    yield* blobs.delete(a)
    yield* equal(yield* blobs.get(a), Option.none(), "deleted")
    yield* equal(Option.map(yield* blobs.get(b), (x) => x.size), Option.some(10), "the copy survives")
    yield* equal(yield* blobs.copy(a, `inputs/${F.uuid()}/p/c.bin`), false, "copy of a missing blob")
    yield* blobs.delete(a)
    yield* equal(yield* blobs.get(`outputs/${F.uuid()}/x/y.png`), Option.none(), "missing")
  })),
  c("blobs: keys that could escape the store are rejected", Effect.gen(function*() {
    const blobs = yield* BlobStore
    for (const key of ["../etc/passwd", "/etc/passwd", "inputs/../../x", "inputs//x", "inputs/x/..", "", "inputs/a b"]) {
      const err = yield* failure(blobs.put(key, Stream.make(bytes(1, 1)), "text/plain"), `put ${JSON.stringify(key)}`)
      yield* equal(err._tag, "StorageError", `put ${JSON.stringify(key)}`)
    }
  }))
]

const runnerIdOf = () => F.uuid() as Workflow["user_runner_id"]

const dispatchCases: ReadonlyArray<ConformanceCase> = [
  c("dispatch: lists unfinished workflows per runner, oldest first, and the runners that have some", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const r = runnerIdOf()
    const m = F.uuid() as Workflow["managed_runner_id"]
    const ws = [
      F.workflow(owner.id, { user_runner_id: r, status: "queued", created_at: F.at(-30) }),
      F.workflow(owner.id, { user_runner_id: r, status: "accepted", created_at: F.at(-20) }),
      F.workflow(owner.id, { user_runner_id: r, status: "completed", created_at: F.at(-25) }),
      F.workflow(owner.id, { user_runner_id: null, managed_runner_id: m, status: "running", created_at: F.at(-10) })
    ]
    yield* insertAll(ws)
    yield* equal(ids(yield* repo.listUnfinishedOnRunner(r!, 10)), [ws[0]!.id, ws[1]!.id], "unfinished on the runner")
    yield* equal((yield* repo.listUnfinishedOnRunner(r!, 1)).length, 1, "limit")
    const runners = yield* repo.unfinishedRunners
    yield* ok(runners.some((x) => x.kind === "user" && x.id === r), "the user runner is listed")
    yield* ok(runners.some((x) => x.kind === "managed" && x.id === m), "the managed runner is listed, as managed")
    yield* repo.update(ws[0]!.id, (w) => Either.right({ ...w, status: "completed" as const }))
    yield* repo.update(ws[1]!.id, (w) => Either.right({ ...w, status: "cancelled" as const }))
    yield* ok(!(yield* repo.unfinishedRunners).some((x) => x.id === r), "a runner with only finished work is not listed")
  })),
  c("dispatch: claims waiting workflows of one runner, oldest first, once per live lease", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const queue = yield* DispatchQueue
    const owner = F.user()
    const r = runnerIdOf()
    const waiting = [
      F.workflow(owner.id, { user_runner_id: r, status: "accepted", created_at: F.at(1) }),
      F.workflow(owner.id, { user_runner_id: r, status: "uploaded", created_at: F.at(2) }),
      F.workflow(owner.id, { user_runner_id: r, status: "accepted", created_at: F.at(3) })
    ]
    yield* insertAll([
      ...waiting,
      F.workflow(owner.id, { user_runner_id: r, status: "queued", created_at: F.at(0) }),
      F.workflow(owner.id, { user_runner_id: r, status: "cancelled", created_at: F.at(0) }),
      F.workflow(owner.id, { user_runner_id: runnerIdOf(), status: "accepted", created_at: F.at(0) })
    ])
    const a = yield* queue.claim(r!, "instance-a", 2, 60_000)
    yield* equal(ids(a), [waiting[0]!.id, waiting[1]!.id], "the two oldest waiting")
    const b = yield* queue.claim(r!, "instance-b", 10, 60_000)
    yield* equal(ids(b), [waiting[2]!.id], "another instance gets only what is not claimed")
    yield* equal(yield* queue.claim(r!, "instance-c", 10, 60_000), [], "nothing left")
    yield* equal(yield* queue.claim(r!, "instance-a", 10, 60_000), [], "not even the holder's own claims again")
    yield* queue.release([waiting[0]!.id], "instance-b")
    yield* equal(yield* queue.claim(r!, "instance-c", 10, 60_000), [], "only the holder can release")
    yield* queue.release([waiting[0]!.id], "instance-a")
    yield* equal(ids(yield* queue.claim(r!, "instance-c", 10, 60_000)), [waiting[0]!.id], "released work is claimable")
    yield* repo.update(waiting[1]!.id, (w) => Either.right({ ...w, status: "queued" as const }))
    yield* queue.release([waiting[1]!.id], "instance-a")
    yield* equal(yield* queue.claim(r!, "instance-d", 10, 60_000), [], "a submitted workflow is not claimable")
  })),
  c("dispatch: concurrent claimers never get the same workflow", Effect.gen(function*() {
    const queue = yield* DispatchQueue
    const owner = F.user()
    const r = runnerIdOf()
    yield* insertAll(Array.from({ length: 30 }, (_, i) => F.workflow(owner.id, { user_runner_id: r, created_at: F.at(i) })))
    const got = yield* Effect.forEach(Array.from({ length: 6 }, (_, i) => `instance-${i}`), (who) => queue.claim(r!, who, 10, 60_000), { concurrency: "unbounded" })
    const all = got.flatMap(ids)
    yield* equal(all.length, 30, "every workflow claimed")
    yield* equal(new Set(all).size, 30, "none twice")
  })),
  c("dispatch: an expired lease can be taken over; renewing keeps it", Effect.gen(function*() {
    const queue = yield* DispatchQueue
    const owner = F.user()
    const r = runnerIdOf()
    const [kept, lapsed] = [F.workflow(owner.id, { user_runner_id: r, created_at: F.at(1) }), F.workflow(owner.id, { user_runner_id: r, created_at: F.at(2) })]
    yield* insertAll([kept, lapsed])
    yield* equal((yield* queue.claim(r!, "dead", 10, 300)).length, 2, "claimed with a short lease")
    yield* Effect.sleep("150 millis")
    yield* queue.renew([kept.id], "dead", 60_000)
    yield* Effect.sleep("300 millis")
    yield* equal(ids(yield* queue.claim(r!, "survivor", 10, 60_000)), [lapsed.id], "only the lapsed lease is taken over")
  })),
  c("dispatch: notify wakes the listeners of new work", Effect.gen(function*() {
    const queue = yield* DispatchQueue
    const r = F.uuid()
    const fiber = yield* queue.wakeups.pipe(Stream.filter((id) => id === r), Stream.runHead, Effect.fork)
    yield* Effect.sleep("100 millis")
    yield* queue.notify(r)
    yield* equal(yield* Fiber.join(fiber), Option.some(r), "the runner id arrives")
  }).pipe(Effect.timeout("10 seconds"))),
  c("dispatch: ownership of a runner gives a client id until released", Effect.gen(function*() {
    const ownership = yield* RunnerOwnership
    const r = F.uuid()
    const lease = yield* Effect.scoped(Effect.gen(function*() {
      const held = yield* ownership.acquire(r)
      if (Option.isSome(held)) yield* ok(yield* held.value.held, "held while its scope is open")
      return held
    }))
    yield* ok(Option.isSome(lease) && lease.value.clientId.length > 0, "a lease with a client id")
    const again = yield* Effect.scoped(ownership.acquire(r))
    yield* ok(Option.isSome(again), "free again once the first scope closed")
  }))
]

/** Every case a store must pass. */
export const storeConformanceCases: ReadonlyArray<ConformanceCase> = [
  ...workflowCases,
  ...templateCases,
  ...runnerCases,
  ...accountCases,
  ...eventCases,
  ...blobCases,
  ...dispatchCases
]

