/**
 * The webhook delivery pool of `wes serve` (core's `runDeliverer`) over node's sender, run for the
 * life of the layer. Each instance claims under its own name, so several on one database share
 * the deliveries (see core's Deliverer.ts).
 */
import { defaultDelivererOptions, runDeliverer, type RetryOptions, type WebhookRepository } from "@wes/core"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { randomUUID } from "node:crypto"
import { hostname } from "node:os"
import { webhookSenderNode, type WebhookSendOptions } from "./WebhookSenderNode.js"

export interface WebhookDeliveryOptions extends WebhookSendOptions {
  readonly retry: RetryOptions
  readonly concurrency?: number | undefined
  readonly pollInterval?: Duration.Input | undefined
  /** How long a claim lasts beyond the send timeout: after a crash, its deliveries wait this long (default 15 s). */
  readonly leaseMargin?: Duration.Input | undefined
}

export const webhookDeliveryLayer = (options: WebhookDeliveryOptions): Layer.Layer<never, never, WebhookRepository> => {
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
  const defaults = defaultDelivererOptions(owner)
  const timeoutMs = Duration.toMillis(options.timeout)
  return Layer.effectDiscard(Effect.forkScoped(runDeliverer({
    ...defaults,
    concurrency: options.concurrency ?? defaults.concurrency,
    pollInterval: options.pollInterval ?? defaults.pollInterval,
    // Longer than a send can take, so a live instance's claim never expires under it.
    lease: Duration.millis(timeoutMs + Duration.toMillis(options.leaseMargin ?? Duration.seconds(15))),
    retry: options.retry
  }))).pipe(Layer.provide(webhookSenderNode(options)))
}
