/**
 * Webhooks in memory: endpoints per user and the outbox of deliveries. The workflow repository's
 * transition calls `record` in the same synchronous step as the move, so a status change and its
 * deliveries are stored together or not at all.
 */
import {
  deliveryPayload,
  isHooked,
  eventTypeOf,
  type NewWorkflowEvent,
  type WebhookDelivery,
  type WebhookEndpoint,
  WebhookRepository,
  type WorkflowHead,
  type WorkflowStatus,
  DELIVERY_WINDOW
} from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** The attempts kept per delivery (the oldest are dropped), as in PostgreSQL. */
const ATTEMPTS_KEPT = 50

interface Row {
  delivery: WebhookDelivery
  claimedBy: string | null
  leaseUntil: number
}

export class WebhookTable {
  readonly endpoints = new Map<string, WebhookEndpoint>()
  /** Every delivery, in creation order. */
  readonly rows = new Map<string, Row>()
  readonly byWorkflow = new Map<string, Array<string>>()
  /** Ids of pending deliveries, in creation order (what a claim scans). */
  readonly pending = new Set<string>()

  constructor(private readonly newId: () => string, private readonly signal: () => void) {}

  /** The deliveries of a move's status events that deserve one (outbox). */
  record(after: WorkflowHead, events: ReadonlyArray<NewWorkflowEvent>, at: DateTime.Utc): void {
    const url = after.webhook_url ?? this.endpoints.get(after.user_id)?.url
    if (url === undefined) return
    let recorded = false
    for (const e of events) {
      const status = e.type === "status" ? (e.data as { status?: WorkflowStatus }).status : undefined
      if (status === undefined || !isHooked(status)) continue
      const id = this.newId()
      const delivery: WebhookDelivery = {
        id,
        workflow_id: after.id,
        user_id: after.user_id,
        url,
        type: eventTypeOf(status),
        payload: deliveryPayload(status, at, e.data),
        status: "pending",
        created_at: at,
        next_attempt_at: at,
        expires_at: DateTime.addDuration(at, DELIVERY_WINDOW),
        delivered_at: null,
        attempts: []
      }
      this.rows.set(id, { delivery, claimedBy: null, leaseUntil: 0 })
      this.pending.add(id)
      const list = this.byWorkflow.get(after.id)
      if (list === undefined) this.byWorkflow.set(after.id, [id])
      else list.push(id)
      recorded = true
    }
    if (recorded) this.signal()
  }

  /**
   * Deletes up to `limit` deliveries that ended at or before `before` (delivered: when delivered;
   * failed: the end of its retry window); how many.
   */
  prune(before: DateTime.Utc, limit: number): number {
    let pruned = 0
    for (const [id, { delivery }] of this.rows) {
      if (pruned >= limit) break
      const end = delivery.status === "delivered" ? delivery.delivered_at : delivery.status === "failed" ? delivery.expires_at : null
      if (end === null || DateTime.isGreaterThan(end, before)) continue
      this.rows.delete(id)
      const list = this.byWorkflow.get(delivery.workflow_id)
      const rest = list?.filter((d) => d !== id) ?? []
      if (rest.length === 0) this.byWorkflow.delete(delivery.workflow_id)
      else this.byWorkflow.set(delivery.workflow_id, rest)
      pruned++
    }
    return pruned
  }
}

export const makeMemoryWebhookRepository = (table: WebhookTable, recorded: Effect.Effect<void>) =>
  WebhookRepository.of({
    recorded,
    findEndpoint: (userId) => Effect.sync(() => Option.fromNullishOr(table.endpoints.get(userId))),
    putEndpoint: (endpoint) =>
      Effect.sync(() => {
        const existing = table.endpoints.get(endpoint.user_id)
        const stored = existing === undefined ? endpoint : { ...existing, url: endpoint.url, updated_at: endpoint.updated_at }
        table.endpoints.set(endpoint.user_id, stored)
        return { endpoint: stored, created: existing === undefined }
      }),
    deleteEndpoint: (userId) => Effect.sync(() => table.endpoints.delete(userId)),
    rotateSecret: (userId, secret, previousUntil, at) =>
      Effect.sync(() => {
        const existing = table.endpoints.get(userId)
        if (existing === undefined) return Option.none()
        const next = { ...existing, secret, previous_secret: existing.secret, previous_expires_at: previousUntil, updated_at: at }
        table.endpoints.set(userId, next)
        return Option.some(next)
      }),
    claim: (owner, now, leaseUntil, limit) =>
      Effect.sync(() => {
        const nowMs = DateTime.toEpochMillis(now)
        const out: Array<WebhookDelivery> = []
        const blocked = new Set<string>()
        for (const id of table.pending) {
          if (out.length >= limit) break
          const row = table.rows.get(id)!
          const d = row.delivery
          const key = `${d.workflow_id} ${d.url}`
          if (blocked.has(key)) continue
          blocked.add(key) // later ones of this workflow and URL wait for this one
          const due = d.next_attempt_at !== null && DateTime.toEpochMillis(d.next_attempt_at) <= nowMs
          if (!due || (row.claimedBy !== null && row.leaseUntil > nowMs)) continue
          row.claimedBy = owner
          row.leaseUntil = DateTime.toEpochMillis(leaseUntil)
          out.push(d)
        }
        return out
      }),
    complete: (id, owner, attempt, outcome) =>
      Effect.sync(() => {
        const row = table.rows.get(id)
        if (row === undefined || row.claimedBy !== owner) return false
        const d = row.delivery
        row.claimedBy = null
        row.leaseUntil = 0
        row.delivery = {
          ...d,
          attempts: [...d.attempts, attempt].slice(-ATTEMPTS_KEPT),
          status: outcome._tag === "Delivered" ? "delivered" : outcome._tag === "Failed" ? "failed" : "pending",
          next_attempt_at: outcome._tag === "RetryAt" ? outcome.at : null,
          delivered_at: outcome._tag === "Delivered" ? attempt.at : d.delivered_at
        }
        if (outcome._tag !== "RetryAt") table.pending.delete(id)
        return true
      }),
    listForWorkflow: (workflowId) => Effect.sync(() => (table.byWorkflow.get(workflowId) ?? []).map((id) => table.rows.get(id)!.delivery)),
    retry: (workflowId, id, now, expiresAt) =>
      Effect.sync(() => {
        const row = table.rows.get(id)
        if (row === undefined || row.delivery.workflow_id !== workflowId) return Option.none()
        row.delivery = { ...row.delivery, status: "pending", next_attempt_at: now, expires_at: expiresAt }
        if (!table.pending.has(id)) {
          // Back in the scan order by creation: rebuild the set (a manual action, rare).
          const ids = [...table.pending, id].sort((a, b) => order(table, a) - order(table, b))
          table.pending.clear()
          for (const x of ids) table.pending.add(x)
        }
        return Option.some(row.delivery)
      })
  })

const order = (table: WebhookTable, id: string) => DateTime.toEpochMillis(table.rows.get(id)!.delivery.created_at)
