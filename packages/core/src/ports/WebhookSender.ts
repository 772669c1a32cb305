/** Sending one delivery: the platform's HTTP client and signing (http-node provides it). */
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import type * as Effect from "effect/Effect"
import type { SendResult } from "../domain/DeliveryPolicy.js"

export interface WebhookMessage {
  readonly id: string
  readonly url: string
  readonly payload: string
  readonly timestamp: DateTime.Utc
  /** Every secret to sign with (two while a rotated-out secret is still valid). */
  readonly secrets: ReadonlyArray<string>
}

export class WebhookSender extends Context.Service<WebhookSender, {
  /** POSTs the message, signed; never fails: every way it can end is a `SendResult`. */
  readonly send: (message: WebhookMessage) => Effect.Effect<SendResult>
}>()("@wes/core/WebhookSender") {}
