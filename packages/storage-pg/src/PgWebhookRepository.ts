/**
 * Core's `WebhookRepository` in PostgreSQL. Deliveries are inserted by the transition statement
 * (WorkflowWrites.ts); here they are claimed the way workflows are (PgDispatchQueue): one
 * statement locks due rows with `FOR UPDATE SKIP LOCKED` and stamps a lease, so concurrent
 * instances never take the same delivery, and one whose owner died is taken again once its lease
 * has expired. Per workflow and URL only the oldest pending delivery is claimable (order kept).
 */
import * as SqlClient from "effect/sql/SqlClient"
import { DeliveryAttempt, WebhookRepository } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { ListenChannel } from "./PgListener.js"
import { runPlannedEachRun } from "./PgPool.js"
import { isId, orStorageError, run, toDate } from "./Sql.js"
import { tableOn } from "./Table.js"
import { webhookDeliveries, webhookEndpoints } from "./Tables.js"

/** The attempts kept per delivery (the oldest are dropped). */
export const ATTEMPTS_KEPT = 50

// An attempt's JSON form (`toCodecJson`: its timestamps as ISO strings), as the column stores it.
const encodeAttempt = Schema.encodeSync(Schema.toCodecJson(DeliveryAttempt))

/**
 * The hint of new deliveries, from the store's LISTEN connection: a NOTIFY of the transition
 * statement, and every (re)connection (what was announced meanwhile is looked at).
 */
export const webhookWakeupsOn = (channel: string): Effect.Effect<{ readonly listen: ListenChannel; readonly recorded: Effect.Effect<void> }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const signals = yield* Effect.acquireRelease(Queue.sliding<void>(1), Queue.shutdown)
    const wake = Effect.asVoid(Queue.offer(signals, undefined))
    return { listen: { channel, onPayload: () => wake, onConnected: wake }, recorded: Queue.take(signals) }
  })

export const makePgWebhookRepository = (recorded: Effect.Effect<void> = Effect.never) => Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const endpoints = tableOn(sql, webhookEndpoints)
  const deliveries = tableOn(sql, webhookDeliveries)

  return WebhookRepository.of({
    recorded,
    findEndpoint: (userId) =>
      isId(userId)
        ? endpoints.findOne("webhooks.findEndpoint", sql`user_id = ${userId}`)
        : Effect.succeedNone,
    putEndpoint: (e) =>
      endpoints.insert(e, sql`ON CONFLICT (user_id) DO UPDATE SET url = EXCLUDED.url, updated_at = EXCLUDED.updated_at
        RETURNING ${endpoints.columns}, (xmax = 0) AS created`).pipe(
        Effect.flatMap((rows) =>
          Effect.map(endpoints.decodeFirst(rows), (endpoint) => ({ endpoint: Option.getOrThrow(endpoint), created: rows[0]?.created === true }))
        ),
        orStorageError("webhooks.putEndpoint")
      ),
    deleteEndpoint: (userId) =>
      isId(userId)
        ? run(sql`DELETE FROM webhook_endpoints WHERE user_id = ${userId} RETURNING user_id`).pipe(
          Effect.map((rows) => rows.length > 0),
          orStorageError("webhooks.deleteEndpoint")
        )
        : Effect.succeed(false),
    rotateSecret: (userId, secret, previousUntil, at) =>
      run(sql`UPDATE webhook_endpoints SET previous_secret = secret, secret = ${secret},
          previous_expires_at = ${toDate(previousUntil)}, updated_at = ${toDate(at)}
        WHERE user_id = ${userId} RETURNING ${endpoints.columns}`).pipe(
        Effect.flatMap(endpoints.decodeFirst),
        orStorageError("webhooks.rotateSecret")
      ),
    claim: (owner, now, leaseUntil, limit) =>
      // Planned at each run (PgPool.ts): which deliveries are due and first in line changes
      // with every claim, and a generic plan of it was measured 2-3x slower under load.
      runPlannedEachRun(sql`WITH due AS (
          SELECT d.id FROM webhook_deliveries d
          WHERE d.status = 'pending' AND d.next_attempt_at <= ${toDate(now)}
            AND (d.lease_expires_at IS NULL OR d.lease_expires_at < ${toDate(now)})
            AND NOT EXISTS (
              SELECT 1 FROM webhook_deliveries p
              WHERE p.workflow_id = d.workflow_id AND p.ord < d.ord AND p.url = d.url AND p.status = 'pending'
            )
          ORDER BY d.next_attempt_at, d.ord
          LIMIT ${limit}
          FOR UPDATE SKIP LOCKED
        )
        UPDATE webhook_deliveries w SET claimed_by = ${owner}, lease_expires_at = ${toDate(leaseUntil)}
        FROM due WHERE w.id = due.id
        RETURNING ${sql.literal(webhookDeliveries.list("w"))}`, webhookDeliveries.columns).pipe(
        Effect.flatMap(deliveries.decodeRows),
        orStorageError("webhooks.claim")
      ),
    complete: (id, owner, attempt, outcome) =>
      run(sql`UPDATE webhook_deliveries SET
          attempts = CASE WHEN jsonb_array_length(attempts) >= ${ATTEMPTS_KEPT} THEN attempts - 0 ELSE attempts END
            || jsonb_build_array(${JSON.stringify(encodeAttempt(attempt))}::jsonb),
          status = ${outcome._tag === "Delivered" ? "delivered" : outcome._tag === "Failed" ? "failed" : "pending"},
          next_attempt_at = ${outcome._tag === "RetryAt" ? toDate(outcome.at) : null},
          delivered_at = coalesce(${outcome._tag === "Delivered" ? toDate(attempt.at) : null}::timestamptz, delivered_at),
          claimed_by = NULL, lease_expires_at = NULL
        WHERE id = ${id} AND claimed_by = ${owner} RETURNING id`).pipe(
        Effect.map((rows) => rows.length > 0),
        orStorageError("webhooks.complete")
      ),
    listForWorkflow: (workflowId) =>
      isId(workflowId)
        ? deliveries.findAll("webhooks.list", sql`workflow_id = ${workflowId}`, "ORDER BY ord")
        : Effect.succeed([]),
    retry: (workflowId, id, now, expiresAt) =>
      isId(workflowId) && isId(id)
        ? run(sql`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ${toDate(now)}, expires_at = ${toDate(expiresAt)}
            WHERE id = ${id} AND workflow_id = ${workflowId} RETURNING ${deliveries.columns}`).pipe(
          Effect.flatMap(deliveries.decodeFirst),
          orStorageError("webhooks.retry")
        )
        : Effect.succeedNone
  })
})

/** Without wake-ups (the pool polls): the store's layer (`layerPgWorkflows`) wires them. */
export const PgWebhookRepository: Layer.Layer<WebhookRepository, never, SqlClient.SqlClient> = Layer.effect(
  WebhookRepository,
  makePgWebhookRepository()
)

