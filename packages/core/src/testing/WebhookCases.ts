/**
 * The conformance cases of webhooks: the outbox (a transition records the deliveries of its
 * status changes, only when the workflow or its owner has a URL), endpoints and secret rotation,
 * and claims (due only, per workflow and URL in order, leased, taken again once the lease expired).
 */
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { DeliveryAttempt, WebhookDelivery } from "../domain/Webhook.js"
import { WebhookRepository } from "../ports/WebhookRepository.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"
import { WorkflowTransition as T } from "../domain/WorkflowStatus.js"
import { equal } from "./Assert.js"
import { c, type ConformanceCase } from "./Case.js"
import * as F from "./Fixtures.js"

const endpointOf = (userId: string, url: string) => ({
  user_id: userId,
  url,
  secret: "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMw==",
  previous_secret: null,
  previous_expires_at: null,
  created_at: F.at(0),
  updated_at: F.at(0)
})

/** A workflow of a user with an endpoint, run to the end: queued, running and completed deliveries. */
const runToEnd = (userId: string, over: Parameters<typeof F.workflow>[1] = {}) =>
  Effect.gen(function*() {
    const repo = yield* WorkflowRepository
    const w = F.workflow(userId, over)
    yield* repo.create(w)
    yield* repo.transition({ id: w.id, steps: [T.Uploaded()], at: F.at(100) })
    yield* repo.transition({ id: w.id, steps: [T.Queued({ prompt_id: "p", queue_number: 1 })], at: F.at(101) })
    yield* repo.transition({ id: w.id, steps: [T.QueueMoved({ queue_number: 0 })], at: F.at(102) })
    yield* repo.transition({ id: w.id, steps: [T.Started({})], at: F.at(103) })
    yield* repo.transition({ id: w.id, steps: [T.Completed({})], at: F.at(104) })
    return w
  })

const attempt = (at: DateTime.Utc, status_code: number | null, next: DateTime.Utc | null): DeliveryAttempt => ({
  at,
  status_code,
  error: status_code === 200 ? null : "HTTP 503",
  duration_ms: 12,
  next_attempt_at: next
})

const mine = (ds: ReadonlyArray<WebhookDelivery>, workflowId: string) => ds.filter((d) => d.workflow_id === workflowId).map((d) => d.type)

export const webhookCases: ReadonlyArray<ConformanceCase> = [
  c("webhooks: a transition records its status changes' deliveries (queued, running, ends), only with a URL", Effect.gen(function*() {
    const hooks = yield* WebhookRepository
    const workflows = yield* WorkflowRepository
    const silent = F.user()
    const quiet = yield* runToEnd(silent.id)
    yield* equal(yield* hooks.listForWorkflow(quiet.id), [], "no URL: no delivery")
    const owner = F.user()
    yield* hooks.putEndpoint(endpointOf(owner.id, "https://hooks.example/a"))
    const w = yield* runToEnd(owner.id)
    const ds = yield* hooks.listForWorkflow(w.id)
    yield* equal(ds.map((d) => d.type), ["workflow.queued", "workflow.running", "workflow.completed"], "types, in order")
    yield* equal(ds.map((d) => [d.url, d.status, d.attempts, d.user_id]), ds.map(() => ["https://hooks.example/a", "pending", [], owner.id]), "pending")
    const body = JSON.parse(ds[2]!.payload) as { type: string; timestamp: string; data: { id: string; status: string } }
    yield* equal([body.type, body.data.id, body.data.status, body.timestamp], ["workflow.completed", w.id, "completed", DateTime.formatIso(F.at(104))], "body")
    yield* equal(ds[0]!.next_attempt_at, F.at(101), "due at the change")
    yield* equal(ds[0]!.expires_at, F.at(101 + 24 * 60), "retried for 24 hours")
    const own = yield* runToEnd(owner.id, { webhook_url: "https://own.example/hook" })
    yield* equal((yield* hooks.listForWorkflow(own.id)).map((d) => d.url), Array(3).fill("https://own.example/hook"), "a workflow's own URL")
    const cancelled = F.workflow(owner.id)
    yield* workflows.create(cancelled)
    yield* workflows.transition({ id: cancelled.id, steps: [T.Cancelled()], at: F.at(110) })
    yield* equal((yield* hooks.listForWorkflow(cancelled.id)).map((d) => d.type), ["workflow.cancelled"], "a cancel")
  })),
  c("webhooks: endpoints are set, kept on a URL change, rotated with the previous secret, deleted", Effect.gen(function*() {
    const hooks = yield* WebhookRepository
    const owner = F.user()
    const first = yield* hooks.putEndpoint(endpointOf(owner.id, "https://a.example/"))
    yield* equal(first.created, true, "created")
    const moved = yield* hooks.putEndpoint({ ...endpointOf(owner.id, "https://b.example/"), secret: "whsec_other", updated_at: F.at(1) })
    yield* equal([moved.created, moved.endpoint.url, moved.endpoint.secret], [false, "https://b.example/", first.endpoint.secret], "URL changed, secret kept")
    const rotated = yield* hooks.rotateSecret(owner.id, "whsec_new", F.at(60 * 24), F.at(2))
    yield* equal(
      Option.map(rotated, (e) => [e.secret, e.previous_secret, e.previous_expires_at]),
      Option.some(["whsec_new", first.endpoint.secret, F.at(60 * 24)]),
      "rotated"
    )
    yield* equal(yield* hooks.rotateSecret(F.user().id, "whsec_x", F.at(1), F.at(1)), Option.none(), "no endpoint to rotate")
    yield* equal(yield* hooks.deleteEndpoint(owner.id), true, "deleted")
    yield* equal(yield* hooks.findEndpoint(owner.id), Option.none(), "gone")
    yield* equal(yield* hooks.deleteEndpoint(owner.id), false, "nothing left to delete")
  })),
  c("webhooks: claims take due deliveries, one per workflow and URL at a time in order, leased; an expired lease is taken again", Effect.gen(function*() {
    const hooks = yield* WebhookRepository
    const owner = F.user()
    yield* hooks.putEndpoint(endpointOf(owner.id, "https://hooks.example/b"))
    const w = yield* runToEnd(owner.id)
    const now = F.at(200)
    const lease = (t: DateTime.Utc) => DateTime.addDuration(t, Duration.minutes(1))
    const first = (yield* hooks.claim("one", now, lease(now), 100)).filter((d) => d.workflow_id === w.id)
    yield* equal(first.map((d) => d.type), ["workflow.queued"], "only the oldest")
    yield* equal(mine(yield* hooks.claim("two", now, lease(now), 100), w.id), [], "leased: not claimed twice, and the next waits")
    yield* equal(yield* hooks.complete(first[0]!.id, "two", attempt(now, 200, null), { _tag: "Delivered" }), false, "only the holder completes")
    yield* equal(yield* hooks.complete(first[0]!.id, "one", attempt(now, 200, null), { _tag: "Delivered" }), true, "delivered")
    const second = (yield* hooks.claim("two", now, lease(now), 100)).filter((d) => d.workflow_id === w.id)
    yield* equal(second.map((d) => d.type), ["workflow.running"], "then the next")
    const later = F.at(210)
    yield* hooks.complete(second[0]!.id, "two", attempt(now, 503, later), { _tag: "RetryAt", at: later })
    yield* equal(mine(yield* hooks.claim("two", now, lease(now), 100), w.id), [], "not due yet; the last waits behind it")
    const retried = yield* hooks.claim("two", later, lease(later), 100)
    yield* equal(mine(retried, w.id), ["workflow.running"], "due again")
    const crashed = DateTime.addDuration(lease(later), Duration.seconds(1))
    yield* equal(mine(yield* hooks.claim("three", crashed, lease(crashed), 100), w.id), ["workflow.running"], "lease expired: taken over")
    yield* equal(yield* hooks.complete(second[0]!.id, "two", attempt(later, 200, null), { _tag: "Delivered" }), false, "the old holder lost it")
    yield* hooks.complete(second[0]!.id, "three", attempt(crashed, 410, null), { _tag: "Failed" })
    const logged = yield* hooks.listForWorkflow(w.id)
    yield* equal(logged.map((d) => d.status), ["delivered", "failed", "pending"], "statuses")
    yield* equal(logged[1]!.attempts.map((a) => a.status_code), [503, 410], "the attempts, in order")
    yield* equal(logged[0]!.delivered_at, now, "delivered at")
    yield* equal(mine(yield* hooks.claim("three", crashed, lease(crashed), 100), w.id), ["workflow.completed"], "a failed one no longer blocks")
    const again = yield* hooks.retry(w.id, logged[1]!.id, crashed, F.at(5000))
    yield* equal(Option.map(again, (d) => [d.status, d.next_attempt_at, d.expires_at]), Option.some(["pending", crashed, F.at(5000)]), "retried")
    yield* equal(yield* hooks.retry(F.uuid(), logged[1]!.id, crashed, F.at(5000)), Option.none(), "another workflow's delivery")
  }))
]
