/**
 * Storage of webhook endpoints and deliveries. Deliveries are created by the workflow store's
 * transition itself (the outbox: same statement as the status change), never through here; this
 * hands them to senders by claims with leases, so several instances on one database send each
 * once in the normal case, and one that dies leaves its claims to expire and be taken again.
 */
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StorageError } from "../domain/Errors.js"
import type { DeliveryAttempt, DeliveryOutcome, WebhookDelivery, WebhookEndpoint } from "../domain/Webhook.js"

export type { DeliveryOutcome }

export class WebhookRepository extends Context.Service<WebhookRepository, {
  /**
   * Completes when deliveries were recorded since the last call (at once if some were), so the
   * pool sends them without waiting for its next poll; only a hint (it may never complete).
   */
  readonly recorded: Effect.Effect<void>
  readonly findEndpoint: (userId: string) => Effect.Effect<Option.Option<WebhookEndpoint>, StorageError>
  /** Creates the endpoint with `endpoint.secret`, or changes the URL of the existing one (its secrets kept). */
  readonly putEndpoint: (endpoint: WebhookEndpoint) => Effect.Effect<{ readonly endpoint: WebhookEndpoint; readonly created: boolean }, StorageError>
  /** False when there was none. */
  readonly deleteEndpoint: (userId: string) => Effect.Effect<boolean, StorageError>
  /** Replaces the secret, keeping the old one as `previous_secret` until `previousUntil`. */
  readonly rotateSecret: (
    userId: string,
    secret: string,
    previousUntil: DateTime.Utc,
    at: DateTime.Utc
  ) => Effect.Effect<Option.Option<WebhookEndpoint>, StorageError>
  /**
   * Claims up to `limit` pending deliveries due at `now` whose claim is free or expired, for
   * `owner` until `leaseUntil`: per workflow and URL only the oldest pending one (order kept).
   */
  readonly claim: (
    owner: string,
    now: DateTime.Utc,
    leaseUntil: DateTime.Utc,
    limit: number
  ) => Effect.Effect<ReadonlyArray<WebhookDelivery>, StorageError>
  /** Records an attempt of a delivery `owner` holds, and releases it. False if the claim was lost. */
  readonly complete: (
    id: string,
    owner: string,
    attempt: DeliveryAttempt,
    outcome: DeliveryOutcome
  ) => Effect.Effect<boolean, StorageError>
  /** A workflow's deliveries, oldest first. */
  readonly listForWorkflow: (workflowId: string) => Effect.Effect<ReadonlyArray<WebhookDelivery>, StorageError>
  /** Makes a delivery of this workflow pending again, due `now`, retried until `expiresAt`. */
  readonly retry: (
    workflowId: string,
    id: string,
    now: DateTime.Utc,
    expiresAt: DateTime.Utc
  ) => Effect.Effect<Option.Option<WebhookDelivery>, StorageError>
}>()("@wes/core/WebhookRepository") {}
