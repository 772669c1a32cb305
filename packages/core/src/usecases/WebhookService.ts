/**
 * The webhook use cases: a user's endpoint (set, show, remove, rotate its secret), a workflow's
 * delivery log, and re-sending one delivery. Secrets are `whsec_` + base64 of 32 random bytes
 * (Standard Webhooks); the whole secret is shown only when it is made.
 */
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Base64 from "effect/encoding/Base64"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { User } from "../domain/Account.js"
import { Crypto } from "../domain/Crypto.js"
import { DeliveryNotFound, type StorageError, type ValidationError, WebhookNotFound, WorkflowNotFound } from "../domain/Errors.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"
import {
  checkWebhookUrl,
  DELIVERY_WINDOW,
  type DeliveryView,
  PREVIOUS_SECRET_VALIDITY,
  toDeliveryView,
  toWebhookView,
  type WebhookView
} from "../domain/Webhook.js"
import { WebhookRepository } from "../ports/WebhookRepository.js"

export class WebhookService extends Context.Service<WebhookService, {
  readonly get: (user: User) => Effect.Effect<WebhookView, WebhookNotFound | StorageError>
  /** Sets the URL; a new endpoint gets a secret, shown whole in this answer only. */
  readonly put: (user: User, url: string) => Effect.Effect<WebhookView, ValidationError | StorageError>
  readonly remove: (user: User) => Effect.Effect<void, WebhookNotFound | StorageError>
  /** A new secret (shown whole); the old one keeps signing, alongside, for 24 hours. */
  readonly rotate: (user: User) => Effect.Effect<WebhookView, WebhookNotFound | StorageError>
  /** Fails with WebhookNotFound unless the user has an endpoint (whose secret signs per-workflow URLs too). */
  readonly requireEndpoint: (user: User) => Effect.Effect<void, WebhookNotFound | StorageError>
  readonly deliveries: (user: User, workflowId: string) => Effect.Effect<ReadonlyArray<DeliveryView>, WorkflowNotFound | StorageError>
  readonly retry: (user: User, workflowId: string, deliveryId: string) => Effect.Effect<DeliveryView, WorkflowNotFound | DeliveryNotFound | StorageError>
}>()("@wes/core/WebhookService") {}

const make = Effect.gen(function*() {
  const repo = yield* WebhookRepository
  const workflows = yield* WorkflowRepository
  const crypto = yield* Crypto
  const newSecret = Effect.map(crypto.randomBytes(32), (bytes) => `whsec_${Base64.encode(bytes)}`)
  const found = <A>(o: Option.Option<A>) => Option.match(o, { onNone: () => Effect.fail(new WebhookNotFound()), onSome: Effect.succeed })
  const ownWorkflow = (user: User, id: string) =>
    Effect.flatMap(workflows.findHeadForUser(user.id, id), Option.match({ onNone: () => Effect.fail(new WorkflowNotFound()), onSome: Effect.succeed }))

  return WebhookService.of({
    get: (user) =>
      Effect.gen(function*() {
        const endpoint = yield* found(yield* repo.findEndpoint(user.id))
        return toWebhookView(endpoint, yield* DateTime.now)
      }),
    put: (user, url) =>
      Effect.gen(function*() {
        const href = yield* checkWebhookUrl("url", url)
        const now = yield* DateTime.now
        const secret = yield* newSecret
        const { created, endpoint } = yield* repo.putEndpoint({
          user_id: user.id,
          url: href,
          secret,
          previous_secret: null,
          previous_expires_at: null,
          created_at: now,
          updated_at: now
        })
        const view = toWebhookView(endpoint, now)
        return created ? { ...view, secret: endpoint.secret } : view
      }),
    remove: (user) => Effect.flatMap(repo.deleteEndpoint(user.id), (deleted) => (deleted ? Effect.void : Effect.fail(new WebhookNotFound()))),
    rotate: (user) =>
      Effect.gen(function*() {
        const now = yield* DateTime.now
        const secret = yield* newSecret
        const endpoint = yield* found(yield* repo.rotateSecret(user.id, secret, DateTime.addDuration(now, PREVIOUS_SECRET_VALIDITY), now))
        return { ...toWebhookView(endpoint, now), secret }
      }),
    requireEndpoint: (user) => Effect.asVoid(Effect.flatMap(repo.findEndpoint(user.id), found)),
    deliveries: (user, workflowId) =>
      Effect.gen(function*() {
        yield* ownWorkflow(user, workflowId)
        return (yield* repo.listForWorkflow(workflowId)).map(toDeliveryView)
      }),
    retry: (user, workflowId, deliveryId) =>
      Effect.gen(function*() {
        yield* ownWorkflow(user, workflowId)
        const now = yield* DateTime.now
        const delivery = yield* repo.retry(workflowId, deliveryId, now, DateTime.addDuration(now, DELIVERY_WINDOW))
        return yield* Option.match(delivery, { onNone: () => Effect.fail(new DeliveryNotFound()), onSome: (d) => Effect.succeed(toDeliveryView(d)) })
      })
  })
})

export const WebhookServiceLive: Layer.Layer<WebhookService, never, WebhookRepository | WorkflowRepository | Crypto> = Layer.effect(
  WebhookService,
  make
)
