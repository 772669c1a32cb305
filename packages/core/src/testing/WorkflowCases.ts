/**
 * The conformance cases of workflows: their records and reads, creates with their limits and
 * idempotency keys, guarded transitions with their events and outputs, the scheduling read,
 * and the dispatch queue. Part of the one definition of a store (StoreConformance.ts).
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { DispatchQueue, RunnerOwnership } from "../ports/Dispatch.js"
import { RunnerLoad } from "../ports/RunnerLoad.js"
import { ManagedRunnerRepository } from "../ports/ManagedRunnerRepository.js"
import { RunnerRepository } from "../ports/RunnerRepository.js"
import type { Workflow, WorkflowOutput } from "../domain/Workflow.js"
import { outputData, summaryData, WorkflowEventBus } from "../ports/WorkflowEvents.js"
import { type TransitionRequest, WorkflowRepository } from "../ports/WorkflowRepository.js"
import { WorkflowTransition as T } from "../domain/WorkflowStatus.js"
import { equal, failure, ok } from "./Assert.js"
import { c, type ConformanceCase } from "./Case.js"
import * as F from "./Fixtures.js"

/** The priority aging of claims in these cases: 5 minutes, the default. */
const AGING = 300_000
/** An aging so long that no workflow in a case rises a level. */
const NO_AGING = 1e12

const insertAll = (workflows: ReadonlyArray<Workflow>) =>
  Effect.flatMap(WorkflowRepository, (repo) => Effect.forEach(workflows, (w) => repo.create(w), { discard: true }))

const ids = (items: ReadonlyArray<{ readonly id: string } | { readonly workflow: { readonly id: string } }>) =>
  items.map((i) => ("workflow" in i ? i.workflow.id : i.id))

/** Applies a move now; the outcome's tag, and the workflow when applied. */
const move = (id: string, steps: TransitionRequest["steps"], extra: Partial<TransitionRequest> = {}) =>
  Effect.flatMap(WorkflowRepository, (repo) => repo.transition({ id, steps, at: F.at(100), ...extra }))

const outputOf = (w: Workflow, i: number): WorkflowOutput => ({
  id: F.uuid() as never,
  workflow_id: w.id,
  node_id: "9",
  filename: `run_0000${i}_.png`,
  subfolder: "wes",
  type: "output",
  content_type: "image/png",
  size: 100 + i,
  blob_key: `outputs/${w.id}/${i}/run.png`,
  created_at: F.at(i),
  expired_at: null
})

export const workflowCases: ReadonlyArray<ConformanceCase> = [
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
    yield* repo.create(w)
    yield* equal(yield* repo.findById(w.id), Option.some(w), "findById")
    yield* equal(yield* repo.findForUser(owner.id, w.id), Option.some(w), "findForUser by the owner")
    const { workflow_json: _, ...head } = w
    yield* equal(yield* repo.findHeadForUser(owner.id, w.id), Option.some(head), "findHeadForUser: all but the definition")
    yield* equal(yield* repo.findHeadForUser(F.user().id, w.id), Option.none(), "findHeadForUser by another user")
  })),
  c("workflows: create logs the first status event and wakes the runner's dispatcher", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const bus = yield* WorkflowEventBus
    const queue = yield* DispatchQueue
    const w = F.workflow(F.user().id)
    const woken = yield* queue.wakeups.pipe(Stream.filter((id) => id === w.user_runner_id), Stream.runHead, Effect.forkChild)
    yield* Effect.sleep("100 millis")
    yield* repo.create(w)
    const events = yield* bus.read(w.id, 0, 10)
    yield* equal(events.map((e) => [e.seq, e.type, e.data]), [[1, "status", summaryData(w)]], "one status event with the summary")
    yield* equal(yield* Fiber.join(woken), Option.some(w.user_runner_id), "its runner is announced")
  }).pipe(Effect.timeout("10 seconds"))),
  c("workflows: another user's id behaves as missing", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const other = F.user()
    const w = F.workflow(owner.id)
    yield* repo.create(w)
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
  c("workflows: create checks the active and daily limits atomically", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const limits = { active_workflows: 5, workflows_per_day: 100, day_start: F.at(0) }
    const results = yield* Effect.forEach(
      Array.from({ length: 12 }, (_, i) => F.workflow(owner.id, { created_at: F.at(i) })),
      (w) => Effect.result(repo.create(w, { limits })),
      { concurrency: "unbounded" }
    )
    yield* equal(results.filter(Result.isSuccess).length, 5, "exactly the limit succeeds")
    const errors = results.filter(Result.isFailure).map((e) => e.failure)
    yield* ok(errors.every((e) => e._tag === "LimitReached" && e.limit === "active_workflows"), "the rest name active_workflows")
    const daily = { active_workflows: 1000, workflows_per_day: 7, day_start: F.at(0) }
    const more = yield* Effect.forEach(
      Array.from({ length: 5 }, (_, i) => F.workflow(owner.id, { status: "completed", created_at: F.at(20 + i) })),
      (w) => Effect.result(repo.create(w, { limits: daily })),
      { concurrency: "unbounded" }
    )
    yield* equal(more.filter(Result.isSuccess).length, 2, "5 of 7 used: two more fit the daily limit")
    yield* ok(more.filter(Result.isFailure).every((e) => e.failure._tag === "LimitReached" && e.failure.limit === "workflows_per_day"), "daily limit named")
    const yesterday = { active_workflows: 1000, workflows_per_day: 7, day_start: F.at(100) }
    yield* repo.create(F.workflow(owner.id, { status: "completed", created_at: F.at(101) }), { limits: yesterday })
  })),
  c("workflows: an idempotency key returns the first workflow within the window and is released after it", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const first = F.workflow(owner.id, { idempotency_key: "abc", created_at: F.at(10) })
    yield* repo.create(first, { idempotency_since: F.at(0) })
    const dup = yield* failure(repo.create(F.workflow(owner.id, { idempotency_key: "abc", created_at: F.at(11) }), { idempotency_since: F.at(0) }), "duplicate key")
    yield* equal(dup._tag === "DuplicateIdempotencyKey" ? dup.existing.id : dup._tag, first.id, "duplicate returns the first")
    yield* equal(Option.map(yield* repo.findByIdempotencyKey(owner.id, "abc", F.at(0)), (w) => w.id), Option.some(first.id), "findByIdempotencyKey")
    yield* equal(yield* repo.findByIdempotencyKey(owner.id, "abc", F.at(11)), Option.none(), "older than the window")
    yield* equal(yield* repo.findByIdempotencyKey(F.user().id, "abc", F.at(0)), Option.none(), "keys are per user")
    yield* repo.create(F.workflow(F.user().id, { idempotency_key: "abc" }), { idempotency_since: F.at(0) })
    const later = F.workflow(owner.id, { idempotency_key: "abc", created_at: F.at(2000) })
    yield* repo.create(later, { idempotency_since: F.at(1000) })
    yield* equal(Option.map(yield* repo.findByIdempotencyKey(owner.id, "abc", F.at(1000)), (w) => w.id), Option.some(later.id), "a stale key is reused")
  })),
  c("workflows: counts unfinished work per runner, and follows moves", Effect.gen(function*() {
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
    yield* move(a.id, [T.Started({}), T.Completed({})])
    yield* move(m.id, [T.Reassigned({ runner: { kind: "user", id: r1! } })])
    const after = yield* repo.countInFlight([r1!, r2!])
    yield* equal([after.get(r1!) ?? 0, after.get(r2!) ?? 0], [2, 0], "in flight after finishing one and moving one")
    yield* equal(yield* repo.countActive(owner.id), 2, "the user's unfinished work follows too")
  })),
]

export const transitionCases: ReadonlyArray<ConformanceCase> = [
  c("transitions: run events carried by a chain through running to the end come after running and before the end", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const bus = yield* WorkflowEventBus
    const w = F.workflow(F.user().id, { status: "queued", prompt_id: "p", queue_number: 0 })
    yield* repo.create(w)
    const outputs = [outputOf(w, 1)]
    // The start and the end of a prompt seen together: one write walks it through running.
    yield* move(w.id, [T.Started({ at: F.at(50) }), T.Completed({ at: F.at(60) })], {
      outputs,
      events: [{ type: "executing", data: { node: "1" } }, { type: "progress", data: { value: 1 } }]
    })
    const events = yield* bus.read(w.id, 0, 100)
    yield* equal(events.map((e) => e.type === "status" || e.type === "done" ? `${e.type}:${(e.data as { status: string }).status}` : e.type), [
      "status:queued",
      "status:running",
      "executing",
      "progress",
      "output",
      "status:completed",
      "done:completed"
    ], "running, the run, its output, the end")
  })),
  c("transitions: a chain writes every field of its moves and logs one event per step", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const bus = yield* WorkflowEventBus
    const w = F.workflow(F.user().id, { created_at: F.at(1), updated_at: F.at(1) })
    yield* repo.create(w)
    const queued = yield* move(w.id, [T.Uploaded(), T.Queued({ prompt_id: w.id, queue_number: 3 })])
    yield* ok(queued._tag === "Applied", "uploaded + queued applied")
    const atQueued = { ...w, status: "queued" as const, updated_at: F.at(100), prompt_id: w.id, queue_number: 3 }
    const { workflow_json: _, ...headQueued } = atQueued
    yield* equal(queued, { _tag: "Applied", workflow: headQueued }, "the workflow after the move, without its definition")
    yield* move(w.id, [T.QueueMoved({ queue_number: 1 })])
    yield* move(w.id, [T.Started({ at: F.at(50) })])
    const outputs = [outputOf(w, 1), outputOf(w, 2)]
    // WES noticed the end at 97 and stored it at 100 (the move's time): transfer_ms is the difference.
    const done = yield* move(w.id, [T.Completed({ at: F.at(60), noticed_at: F.at(97) })], { outputs })
    const final = {
      ...atQueued,
      status: "completed" as const,
      queue_number: 0,
      started_at: F.at(50),
      completed_at: F.at(60),
      transfer_ms: DateTime.toEpochMillis(F.at(100)) - DateTime.toEpochMillis(F.at(97))
    }
    yield* equal(yield* repo.findById(w.id), Option.some(final), "every field of the walk")
    yield* ok(done._tag === "Applied" && done.workflow.status === "completed", "completed")
    yield* equal(yield* repo.listOutputs(w.id), outputs, "outputs recorded with the end, in order")
    const events = yield* bus.read(w.id, 0, 100)
    const summary = (over: Partial<Workflow>) => summaryData({ ...final, ...over })
    yield* equal(events.map((e) => [e.seq, e.type, e.data]), [
      [1, "status", summaryData(w)],
      [2, "status", summary({ status: "uploaded", queue_number: null, started_at: null, completed_at: null })],
      [3, "status", summary({ status: "queued", started_at: null, completed_at: null })],
      [4, "queue", { queue_number: 1 }],
      [5, "status", summary({ status: "running", completed_at: null })],
      [6, "output", outputData(outputs[0]!)],
      [7, "output", outputData(outputs[1]!)],
      [8, "status", summary({})],
      [9, "done", summary({})]
    ], "the events of each step, in order, with the summary as of that step")
  })),
  c("transitions: the guard refuses a move the table forbids and writes nothing", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const bus = yield* WorkflowEventBus
    const owner = F.user()
    const w = F.workflow(owner.id, { status: "completed", completed_at: F.at(2) })
    yield* repo.create(w)
    yield* equal(yield* move(w.id, [T.Started({})]), { _tag: "Refused", status: "completed" }, "refused, with the status")
    yield* equal(yield* move(w.id, [T.Cancelled()]), { _tag: "Refused", status: "completed" }, "terminal is final")
    yield* equal(yield* repo.findById(w.id), Option.some(w), "unchanged")
    yield* equal((yield* bus.read(w.id, 0, 10)).length, 1, "no event but the first")
    yield* equal(yield* move(F.uuid(), [T.Cancelled()]), { _tag: "Missing" }, "unknown id")
    const other = F.workflow(owner.id)
    yield* repo.create(other)
    yield* equal(yield* move(other.id, [T.Cancelled()], { owner: F.user().id }), { _tag: "Missing" }, "another owner's")
    const mine = yield* move(other.id, [T.Cancelled()], { owner: owner.id })
    yield* ok(mine._tag === "Applied" && mine.workflow.status === "cancelled" && mine.workflow.completed_at !== null, "the owner's")
  })),
  c("transitions: of competing moves exactly one applies", Effect.gen(function*() {
    const bus = yield* WorkflowEventBus
    const repo = yield* WorkflowRepository
    const w = F.workflow(F.user().id, { status: "queued" })
    yield* repo.create(w)
    const outcomes = yield* Effect.forEach(
      Array.from({ length: 30 }, (_, i) => i),
      (i) => move(w.id, i % 2 === 0 ? [T.Cancelled()] : [T.Started({}), T.Completed({})]),
      { concurrency: "unbounded" }
    )
    const applied = outcomes.filter((o) => o._tag === "Applied")
    yield* equal(applied.length, 1, "one winner")
    const end = applied[0]!._tag === "Applied" ? applied[0]!.workflow.status : "none"
    yield* ok(outcomes.every((o) => o._tag === "Applied" || (o._tag === "Refused" && o.status === end)), "the others see the winner's end")
    const types = (yield* bus.read(w.id, 0, 100)).map((e) => e.type)
    yield* equal(types.filter((t) => t === "done").length, 1, "one done event")
  })),
  c("transitions: moving to another runner drops the claim, wakes that runner and counts the attempt", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const queue = yield* DispatchQueue
    const from = F.uuid() as Workflow["user_runner_id"]
    const to = F.uuid() as Workflow["managed_runner_id"]
    const w = F.workflow(F.user().id, { user_runner_id: from, status: "uploaded" })
    yield* repo.create(w)
    yield* equal(ids(yield* queue.claim(from!, "a", 10, 60_000, AGING)), [w.id], "claimed on the first runner")
    const woken = yield* queue.wakeups.pipe(Stream.filter((id) => id === to), Stream.runHead, Effect.forkChild)
    yield* Effect.sleep("100 millis")
    const moved = yield* move(w.id, [T.Reassigned({ runner: { kind: "managed", id: to! } })])
    yield* ok(
      moved._tag === "Applied" && moved.workflow.managed_runner_id === to && moved.workflow.user_runner_id === null &&
        moved.workflow.dispatch_attempts === 1 && moved.workflow.submitted_at === null && moved.workflow.status === "uploaded",
      "assigned to the other runner, attempt counted, nothing submitted there"
    )
    yield* equal(ids(yield* queue.claim(to!, "b", 10, 60_000, AGING)), [w.id], "claimable on the new runner at once")
    yield* equal(yield* Fiber.join(woken), Option.some(to), "the new runner is announced")
  }).pipe(Effect.timeout("10 seconds"))),
  c("transitions: a retry puts a running workflow back in the queue of another runner and records the attempt", Effect.gen(function*() {
    const queue = yield* DispatchQueue
    const bus = yield* WorkflowEventBus
    const repo = yield* WorkflowRepository
    const from = F.uuid() as Workflow["user_runner_id"]
    const to = F.uuid() as Workflow["user_runner_id"]
    const w = F.workflow(F.user().id, { user_runner_id: from, status: "running", prompt_id: "p1", queue_number: 0, started_at: F.at(1) })
    yield* repo.create(w)
    const woken = yield* queue.wakeups.pipe(Stream.filter((id) => id === to), Stream.runHead, Effect.forkChild)
    yield* Effect.sleep("100 millis")
    const attempt = {
      runner_id: from!,
      runner_kind: "user" as const,
      started_at: F.at(1),
      ended_at: F.at(2),
      error_node: "3",
      exception_type: "torch.OutOfMemoryError",
      exception_message: "Allocation on device"
    }
    const moved = yield* move(w.id, [T.Retried({ runner: { kind: "user", id: to! }, attempts: [attempt] })])
    yield* ok(
      moved._tag === "Applied" && moved.workflow.status === "accepted" && moved.workflow.user_runner_id === to &&
        moved.workflow.prompt_id === null && moved.workflow.started_at === null && moved.workflow.submitted_at === null,
      "waiting again, on the other runner, with nothing of the failed run but the attempt"
    )
    const stored = yield* repo.findById(w.id)
    yield* equal(Option.map(stored, (x) => x.attempts), Option.some([attempt]), "the attempt is stored")
    yield* equal(ids(yield* queue.claim(to!, "b", 10, 60_000, AGING)), [w.id], "claimable on the new runner at once")
    yield* equal(yield* Fiber.join(woken), Option.some(to), "the new runner is announced")
    const events = yield* bus.read(w.id, 1, 10)
    yield* equal(events.map((e) => e.type), ["status", "retry"], "a status event, then the attempt")
    yield* equal((events[1]?.data as { exception_type?: string }).exception_type, "torch.OutOfMemoryError", "the attempt's error in the event")
  }).pipe(Effect.timeout("10 seconds"))),
  c("transitions: concurrent moves of different workflows are each applied once", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const ws = Array.from({ length: 40 }, () => F.workflow(owner.id, { status: "running" }))
    yield* insertAll(ws)
    const outcomes = yield* Effect.forEach(ws, (w) => move(w.id, [T.Completed({})]), { concurrency: "unbounded" })
    yield* ok(outcomes.every((o) => o._tag === "Applied" && o.workflow.status === "completed"), "all applied")
    yield* equal(yield* repo.countActive(owner.id), 0, "none left unfinished")
  }))
]

export const runnerLoadCases: ReadonlyArray<ConformanceCase> = [
  c("scheduling: a user's active runners and active managed runners of their types, with work in flight", Effect.gen(function*() {
    const load = yield* RunnerLoad
    const runners = yield* RunnerRepository
    const managed = yield* ManagedRunnerRepository
    const owner = F.user()
    const comfyui = { version: "0.3.50", devices: [], jobs_api: false }
    const busy = F.runner(owner.id, { name: "busy", created_at: F.at(1), comfyui })
    const idle = F.runner(owner.id, { name: "idle", created_at: F.at(2) })
    const off = F.runner(owner.id, { name: "off", status: "disabled" })
    const pro = F.managedRunner({ runner_type: "pro", comfyui: { ...comfyui, jobs_api: true } })
    const plus = F.managedRunner({ runner_type: "plus" })
    const offManaged = F.managedRunner({ runner_type: "pro", status: "disabled" })
    for (const r of [busy, idle, off]) yield* runners.insert(r, undefined)
    for (const r of [pro, plus, offManaged]) yield* managed.insert(r)
    yield* runners.insert(F.runner(F.user().id), undefined)
    yield* insertAll([
      F.workflow(owner.id, { user_runner_id: busy.id, status: "running" }),
      F.workflow(owner.id, { user_runner_id: busy.id, status: "accepted" }),
      F.workflow(owner.id, { user_runner_id: busy.id, status: "completed" }),
      F.workflow(F.user().id, { user_runner_id: null, managed_runner_id: pro.id, status: "queued" })
    ])
    // Managed runners are everyone's: other cases' ones are left out.
    const mine = new Set<string>([busy.id, idle.id, off.id, pro.id, plus.id, offManaged.id])
    const byId = (list: ReadonlyArray<{ readonly target: { readonly id: string }; readonly in_flight: number }>) =>
      Object.fromEntries(list.filter((c) => mine.has(c.target.id)).map((c) => [c.target.id, c.in_flight]))
    yield* equal(byId(yield* load.candidates(owner.id, ["pro"])), { [busy.id]: 2, [idle.id]: 0, [pro.id]: 1 }, "pro types")
    yield* equal(byId(yield* load.candidates(owner.id, [])), { [busy.id]: 2, [idle.id]: 0 }, "no managed types")
    const all = yield* load.candidates(owner.id, ["pro", "plus"])
    yield* equal(byId(all), { [busy.id]: 2, [idle.id]: 0, [pro.id]: 1, [plus.id]: 0 }, "pro and plus")
    const target = all.find((c) => c.target.id === busy.id)!.target
    yield* equal(
      { kind: target.kind, name: target.name, endpoint: target.endpoint, status: target.status, comfyui: target.comfyui },
      { kind: "user", name: "busy", endpoint: busy.endpoint, status: "active", comfyui },
      "targets carry what a runner call needs (which API its ComfyUI has)"
    )
    yield* equal(all.find((c) => c.target.id === pro.id)!.target.comfyui, pro.comfyui, "managed ones too")
    yield* equal(all.find((c) => c.target.id === idle.id)!.target.comfyui, null, "null until probed")
    yield* ok(all.find((c) => c.target.id === pro.id)!.target.kind === "managed", "managed ones are managed")
  }))
]

const runnerIdOf = () => F.uuid() as Workflow["user_runner_id"]

export const dispatchCases: ReadonlyArray<ConformanceCase> = [
  c("dispatch: lists what may be on a runner, oldest first, and the runners that have unfinished work", Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const owner = F.user()
    const r = runnerIdOf()
    const m = F.uuid() as Workflow["managed_runner_id"]
    const ws = [
      F.workflow(owner.id, { user_runner_id: r, status: "queued", created_at: F.at(-30) }),
      F.workflow(owner.id, { user_runner_id: r, status: "accepted", created_at: F.at(-20) }),
      F.workflow(owner.id, { user_runner_id: r, status: "completed", created_at: F.at(-25) }),
      F.workflow(owner.id, { user_runner_id: r, status: "uploaded", submitted_at: F.at(-1), created_at: F.at(-15) }),
      F.workflow(owner.id, { user_runner_id: r, status: "running", created_at: F.at(-5) }),
      F.workflow(owner.id, { user_runner_id: null, managed_runner_id: m, status: "running", created_at: F.at(-10) })
    ]
    yield* insertAll(ws)
    yield* equal(ids(yield* repo.listSubmittedOnRunner(r!, 10)), [ws[0]!.id, ws[3]!.id, ws[4]!.id], "queued, claimed and running, oldest first")
    yield* equal((yield* repo.listSubmittedOnRunner(r!, 1)).length, 1, "limit")
    yield* ok((yield* repo.listSubmittedOnRunner(r!, 10)).every((w) => !("workflow_json" in w)), "without definitions")
    const runners = yield* repo.unfinishedRunners
    yield* ok(runners.some((x) => x.kind === "user" && x.id === r), "the user runner is listed")
    yield* ok(runners.some((x) => x.kind === "managed" && x.id === m), "the managed runner is listed, as managed")
    for (const w of [ws[0]!, ws[1]!, ws[3]!, ws[4]!]) yield* move(w.id, [T.Cancelled()])
    yield* ok(!(yield* repo.unfinishedRunners).some((x) => x.id === r), "a runner with only finished work is not listed")
  })),
  c("dispatch: claims waiting workflows of one runner, oldest first, once per live lease", Effect.gen(function*() {
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
    const a = yield* queue.claim(r!, "instance-a", 2, 60_000, AGING)
    yield* equal(ids(a), [waiting[0]!.id, waiting[1]!.id], "the two oldest waiting")
    yield* ok(a.every((x) => x.workflow.submitted_at !== null && !x.resubmit), "marked as possibly posted; first claim")
    yield* equal(a[0]!.workflow.workflow_json, waiting[0]!.workflow_json, "with the definition to submit")
    const b = yield* queue.claim(r!, "instance-b", 10, 60_000, AGING)
    yield* equal(ids(b), [waiting[2]!.id], "another instance gets only what is not claimed")
    yield* equal(yield* queue.claim(r!, "instance-c", 10, 60_000, AGING), [], "nothing left")
    yield* equal(yield* queue.claim(r!, "instance-a", 10, 60_000, AGING), [], "not even the holder's own claims again")
    yield* queue.release([waiting[0]!.id], "instance-b")
    yield* equal(yield* queue.claim(r!, "instance-c", 10, 60_000, AGING), [], "only the holder can release")
    yield* queue.release([waiting[0]!.id], "instance-a")
    const again = yield* queue.claim(r!, "instance-c", 10, 60_000, AGING)
    yield* equal(ids(again), [waiting[0]!.id], "released work is claimable")
    yield* ok(again[0]!.resubmit, "claimed again: the runner must be asked before posting")
    yield* move(waiting[1]!.id, [T.Queued({ prompt_id: waiting[1]!.id, queue_number: 1 })])
    yield* queue.release([waiting[1]!.id], "instance-a")
    yield* equal(yield* queue.claim(r!, "instance-d", 10, 60_000, AGING), [], "a submitted workflow is not claimable")
  })),
  c("dispatch: claimable names, in one read, the runners with work a claim would take (waiting, unclaimed or lapsed)", Effect.gen(function*() {
    const queue = yield* DispatchQueue
    const owner = F.user()
    const [idle, waiting, claimed, lapsed, busy] = [runnerIdOf(), runnerIdOf(), runnerIdOf(), runnerIdOf(), runnerIdOf()]
    const on = (r: Workflow["user_runner_id"], status: Workflow["status"]) => F.workflow(owner.id, { user_runner_id: r, status, created_at: F.at(1) })
    yield* insertAll([
      on(idle, "completed"),
      on(waiting, "accepted"),
      on(claimed, "uploaded"),
      on(lapsed, "accepted"),
      on(busy, "queued"),
      on(busy, "running")
    ])
    yield* equal((yield* queue.claim(claimed!, "instance-a", 10, 60_000, AGING)).length, 1, "claimed, live")
    // A claim whose lease has already run out: what a dead instance leaves behind.
    yield* equal((yield* queue.claim(lapsed!, "instance-a", 10, 0, AGING)).length, 1, "claimed, lapsed")
    const ready = yield* queue.claimable([idle!, waiting!, claimed!, lapsed!, busy!])
    yield* equal([...ready].sort(), [waiting!, lapsed!].sort(), "the runner with unclaimed work and the one whose claim lapsed")
    yield* equal([...(yield* queue.claimable([]))], [], "no runners, no read")
  })),
  c("dispatch: claims by priority, then by fair share across users, then by age", Effect.gen(function*() {
    const queue = yield* DispatchQueue
    const [a, b, c2] = [F.user(), F.user(), F.user()]
    const r = runnerIdOf()
    const on = (u: { readonly id: string }, minute: number, over: Partial<Workflow> = {}) =>
      F.workflow(u.id, { user_runner_id: r, status: "accepted", created_at: F.at(minute), ...over })
    const burst = [1, 2, 3, 4, 5].map((m) => on(a, m))
    const lone = on(b, 6)
    const urgent = on(c2, 7, { priority: "high" })
    const slow = on(a, 0, { priority: "low" })
    yield* insertAll([...burst, lone, urgent, slow, on(a, 0, { status: "queued" }), on(b, 0, { user_runner_id: runnerIdOf(), status: "queued" })])
    const got = yield* queue.claim(r!, "x", 10, 60_000, NO_AGING)
    yield* equal(ids(got), [urgent.id, lone.id, ...burst.map((w) => w.id), slow.id],
      "high first; then the user with nothing on the runner before the one with a queued workflow; low last")
  })),
  c("dispatch: a user's live claims count as their work on the runner (round robin between users)", Effect.gen(function*() {
    const queue = yield* DispatchQueue
    const [a, b] = [F.user(), F.user()]
    const r = runnerIdOf()
    const as = [1, 2, 3].map((m) => F.workflow(a.id, { user_runner_id: r, created_at: F.at(m) }))
    const bs = [4, 5].map((m) => F.workflow(b.id, { user_runner_id: r, created_at: F.at(m) }))
    yield* insertAll([...as, ...bs])
    const order: Array<string> = []
    for (let i = 0; i < 5; i++) order.push(...ids(yield* queue.claim(r!, "x", 1, 60_000, NO_AGING)))
    yield* equal(order, [as[0]!.id, bs[0]!.id, as[1]!.id, bs[1]!.id, as[2]!.id], "the users take turns")
  })),
  c("dispatch: waiting raises the effective priority, so old low-priority work is not starved", Effect.gen(function*() {
    const queue = yield* DispatchQueue
    const u = F.user()
    const r = runnerIdOf()
    const old = F.workflow(u.id, { user_runner_id: r, created_at: F.at(0), priority: "low" })
    const fresh = F.workflow(u.id, { user_runner_id: r, created_at: F.at(100), priority: "high" })
    yield* insertAll([fresh, old])
    yield* equal(ids(yield* queue.claim(r!, "x", 1, 60_000, NO_AGING)), [fresh.id], "without aging, high goes first")
    yield* queue.release([fresh.id], "x")
    yield* equal(ids(yield* queue.claim(r!, "y", 2, 60_000, 60_000)), [old.id, fresh.id],
      "aged one level a minute, the workflow waiting 100 minutes longer is ahead")
  })),
  c("dispatch: concurrent claimers never get the same workflow, and nothing is left behind", Effect.gen(function*() {
    const queue = yield* DispatchQueue
    const owner = F.user()
    const r = runnerIdOf()
    yield* insertAll(Array.from({ length: 30 }, (_, i) => F.workflow(owner.id, { user_runner_id: r, created_at: F.at(i) })))
    const got = yield* Effect.forEach(Array.from({ length: 6 }, (_, i) => `instance-${i}`), (who) => queue.claim(r!, who, 10, 60_000, AGING), { concurrency: "unbounded" })
    const all = got.flatMap(ids)
    yield* equal(new Set(all).size, all.length, "none twice")
    // A claimer skips what another holds locked at that moment; later claims find the rest.
    for (let i = 0; i < 6 && all.length < 30; i++) all.push(...ids(yield* queue.claim(r!, "instance-late", 10, 60_000, AGING)))
    yield* equal(all.length, 30, "every workflow claimed")
    yield* equal(new Set(all).size, 30, "still none twice")
  })),
  c("dispatch: an expired lease can be taken over; renewing keeps it", Effect.gen(function*() {
    const queue = yield* DispatchQueue
    const owner = F.user()
    const r = runnerIdOf()
    const [kept, lapsed] = [F.workflow(owner.id, { user_runner_id: r, created_at: F.at(1) }), F.workflow(owner.id, { user_runner_id: r, created_at: F.at(2) })]
    yield* insertAll([kept, lapsed])
    yield* equal((yield* queue.claim(r!, "dead", 10, 300, AGING)).length, 2, "claimed with a short lease")
    yield* Effect.sleep("150 millis")
    yield* queue.renew([kept.id], "dead", 60_000)
    yield* Effect.sleep("300 millis")
    yield* equal(ids(yield* queue.claim(r!, "survivor", 10, 60_000, AGING)), [lapsed.id], "only the lapsed lease is taken over")
  })),
  c("dispatch: notify wakes the listeners of new work", Effect.gen(function*() {
    const queue = yield* DispatchQueue
    const r = F.uuid()
    const fiber = yield* queue.wakeups.pipe(Stream.filter((id) => id === r), Stream.runHead, Effect.forkChild)
    yield* Effect.sleep("100 millis")
    yield* queue.notify(r)
    yield* equal(yield* Fiber.join(fiber), Option.some(r), "the runner id arrives")
  }).pipe(Effect.timeout("10 seconds"))),
  c("dispatch: ownership of a runner gives a client id until released", Effect.gen(function*() {
    const ownership = yield* RunnerOwnership
    const r = F.uuid()
    const lease = yield* Effect.scoped(Effect.gen(function*() {
      const held = yield* ownership.acquire(r)
      if (Option.isSome(held)) yield* ok(held.value.held(), "held while its scope is open")
      return held
    }))
    yield* ok(Option.isSome(lease) && lease.value.clientId.length > 0, "a lease with a client id")
    const again = yield* Effect.scoped(ownership.acquire(r))
    yield* ok(Option.isSome(again), "free again once the first scope closed")
  }))
]

