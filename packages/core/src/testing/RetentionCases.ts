/**
 * The conformance cases of retention: due workflows by their owner's tier, claimed in batches
 * with a lease, marked expired once (outputs keep their rows, with the date); events of finished
 * workflows pruned with their last sequence kept; ended webhook deliveries pruned. Times are in
 * 1990-1992, before every other case's, so the store-wide reads see only these cases' rows.
 */
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type { Workflow, WorkflowOutput } from "../domain/Workflow.js"
import { AccountRepository } from "../ports/AccountRepository.js"
import { RetentionRepository } from "../ports/RetentionRepository.js"
import { WebhookRepository } from "../ports/WebhookRepository.js"
import { WorkflowEventBus } from "../ports/WorkflowEvents.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"
import { WorkflowTransition as T } from "../domain/WorkflowStatus.js"
import { equal } from "./Assert.js"
import { c, type ConformanceCase } from "./Case.js"
import * as F from "./Fixtures.js"

/** `year`-01-01 plus `days`. */
const day = (days: number, year = 1990) => DateTime.makeUnsafe(Date.UTC(year, 0, 1) + days * 86_400_000)

const outputOf = (w: Workflow, size: number): WorkflowOutput => ({
  id: F.uuid() as never,
  workflow_id: w.id,
  node_id: "9",
  filename: `out_${size}.png`,
  subfolder: "",
  type: "output",
  content_type: "image/png",
  size,
  blob_key: `outputs/${w.id}/${size}/out.png`,
  created_at: w.created_at,
  expired_at: null
})

/** A workflow of `userId` created and ended (cancelled) at `end`, with outputs of these sizes. */
const ended = (userId: string, end: DateTime.Utc, sizes: ReadonlyArray<number> = []) =>
  Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const w = F.workflow(userId, { created_at: end, updated_at: end })
    yield* repo.create(w)
    yield* repo.transition({ id: w.id, steps: [T.Cancelled()], at: end, outputs: sizes.map((s) => outputOf(w, s)) })
    return w
  })

const lease = (t: DateTime.Utc) => DateTime.addDuration(t, Duration.minutes(10))

export const retentionCases: ReadonlyArray<ConformanceCase> = [
  c("retention: finished workflows are due by their owner's tier, claimed in batches with a lease, marked expired once", Effect.gen(function*() {
    const retention = yield* RetentionRepository
    const workflows = yield* WorkflowRepository
    const accounts = yield* AccountRepository
    const free = yield* accounts.insertUser(F.user({ tier: "free" }))
    const pro = yield* accounts.insertUser(F.user({ tier: "pro" }))
    const unknown = F.user()
    const oldFree = yield* ended(free.id, day(0), [100, 101])
    const recentFree = yield* ended(free.id, day(5))
    const oldPro = yield* ended(pro.id, day(0), [50])
    const ofUnknown = yield* ended(unknown.id, day(1))
    yield* workflows.create(F.workflow(free.id, { created_at: day(0) }))
    const now = day(10)
    const cutoffs = { free: day(3), pro: day(-20), plus: day(-80) }
    const claimed = yield* retention.claimDue(cutoffs, "a", now, lease(now), 100)
    yield* equal(claimed, [
      { id: oldFree.id, tier: "free", completed_at: day(0) },
      { id: ofUnknown.id, tier: "free", completed_at: day(1) }
    ], "due: ended before their tier's cutoff, oldest first (an unknown owner is free); not the pro one, not the unfinished one")
    yield* equal(yield* retention.claimDue(cutoffs, "b", now, lease(now), 100), [], "leased: another instance skips them")
    const storedBefore = yield* retention.storedBytes
    const marked = yield* retention.markExpired([{ id: oldFree.id, expired_at: day(7) }, { id: ofUnknown.id, expired_at: day(8) }])
    yield* equal(marked, { workflows: 2, outputs: 2, output_bytes: 201 }, "marked, with the outputs' bytes")
    yield* equal(storedBefore - (yield* retention.storedBytes), 201, "expired outputs no longer count as stored")
    const outputs = yield* workflows.listOutputs(oldFree.id)
    yield* equal(outputs.map((o) => [o.size, o.expired_at]), [[100, day(7)], [101, day(7)]], "the rows stay, with the expiry")
    yield* equal(yield* retention.markExpired([{ id: oldFree.id, expired_at: day(9) }]), { workflows: 0, outputs: 0, output_bytes: 0 }, "marked once")
    yield* equal((yield* workflows.listOutputs(oldFree.id)).map((o) => o.expired_at), [day(7), day(7)], "the first expiry stays")
    yield* equal(yield* retention.claimDue(cutoffs, "b", day(20), lease(day(20)), 100), [], "a swept workflow is never due again")
    const later = day(40)
    const laterCutoffs = { free: day(33), pro: day(10), plus: day(-50) }
    const batch = yield* retention.claimDue(laterCutoffs, "a", later, lease(later), 1)
    yield* equal(batch.map((w) => w.id), [oldPro.id], "at most the batch's size, oldest end first")
    yield* equal((yield* retention.claimDue(laterCutoffs, "b", later, lease(later), 10)).map((w) => [w.id, w.tier]), [[recentFree.id, "free"]], "the rest")
    const lapsed = DateTime.addDuration(lease(later), Duration.seconds(1))
    yield* equal((yield* retention.claimDue(laterCutoffs, "c", lapsed, lease(lapsed), 10)).map((w) => w.id), [oldPro.id, recentFree.id], "a lapsed lease is claimed again")
    yield* equal((yield* retention.markExpired([{ id: oldPro.id, expired_at: day(30) }, { id: recentFree.id, expired_at: day(12) }])).workflows, 2, "swept")
  })),
  c("retention: the events of workflows that ended before the cutoff are pruned, their last sequence kept", Effect.gen(function*() {
    const retention = yield* RetentionRepository
    const workflows = yield* WorkflowRepository
    const bus = yield* WorkflowEventBus
    const owner = F.user()
    const first = yield* ended(owner.id, day(0, 1991))
    const second = yield* ended(owner.id, day(1, 1991))
    const kept = yield* ended(owner.id, day(60, 1991))
    const running = F.workflow(owner.id, { created_at: day(0, 1991) })
    yield* workflows.create(running)
    const logged = yield* bus.lastSeq(first.id)
    yield* equal((yield* bus.read(first.id, 0, 100)).length, logged, "created and cancelled: logged")
    const cutoff = day(30, 1991)
    const one = yield* retention.pruneEvents(cutoff, 1)
    yield* equal(one.workflows, 1, "at most the batch's size")
    yield* retention.pruneEvents(cutoff, 1000)
    yield* equal(yield* retention.pruneEvents(cutoff, 1000), { workflows: 0, events: 0 }, "pruned once")
    for (const w of [first, second]) {
      yield* equal(yield* bus.read(w.id, 0, 100), [], "pruned")
      yield* equal(yield* bus.lastSeq(w.id), logged, "the last sequence stays")
    }
    yield* equal((yield* bus.read(kept.id, 0, 100)).length, logged, "ended after the cutoff: kept")
    yield* equal((yield* bus.read(running.id, 0, 100)).length, 1, "unfinished: kept")
  })),
  c("retention: webhook deliveries are pruned after their outcome (delivered, or the end of a failed one's window)", Effect.gen(function*() {
    const retention = yield* RetentionRepository
    const hooks = yield* WebhookRepository
    const owner = F.user()
    const t = day(0, 1992)
    yield* hooks.putEndpoint({ user_id: owner.id, url: "https://hooks.example/r", secret: "whsec_cmV0ZW50aW9uLXJldGVudGlvbi1yZXRlbnRpb24=", previous_secret: null, previous_expires_at: null, created_at: t, updated_at: t })
    const delivered = yield* ended(owner.id, t)
    const failed = yield* ended(owner.id, day(2, 1992))
    const pending = yield* ended(owner.id, day(3, 1992))
    const at = day(2, 1992)
    const claimed = (yield* hooks.claim("r", at, lease(at), 100)).filter((d) => d.user_id === owner.id)
    const attempt = { at, status_code: 200, error: null, duration_ms: 5, next_attempt_at: null }
    yield* hooks.complete(claimed.find((d) => d.workflow_id === delivered.id)!.id, "r", attempt, { _tag: "Delivered" })
    yield* hooks.complete(claimed.find((d) => d.workflow_id === failed.id)!.id, "r", { ...attempt, status_code: 400 }, { _tag: "Failed" })
    yield* equal(yield* retention.pruneDeliveries(day(2, 1992), 100), 1, "the delivered one (delivered on day 2)")
    yield* equal(yield* hooks.listForWorkflow(delivered.id), [], "gone")
    yield* equal((yield* hooks.listForWorkflow(failed.id)).length, 1, "the failed one waits for its window's end (day 3)")
    yield* equal(yield* retention.pruneDeliveries(day(30, 1992), 100), 1, "then the failed one; never a pending one")
    yield* equal((yield* hooks.listForWorkflow(pending.id)).map((d) => d.status), ["pending"], "pending: kept")
  }))
]
