/**
 * Webhooks (issue 16): where a user's workflow events go (an endpoint with its signing secret),
 * which events go (status changes to queued, running and every end), and the deliveries the store
 * records in the same write as the status change that causes them (an outbox), with their log of
 * attempts. Bodies follow the Standard Webhooks specification: `{type, timestamp, data}`.
 */
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Struct from "effect/Struct"
import { ValidationError } from "./Errors.js"
import { Int, Timestamp } from "./Json.js"
import { isTerminal, type WorkflowStatus } from "./Workflow.js"

/** The statuses whose arrival is announced (progress never is). */
export const hookedStatuses: ReadonlyArray<WorkflowStatus> = ["queued", "running", "completed", "cancelled", "invalid", "failed"]
export const isHooked = (s: WorkflowStatus): boolean => s === "queued" || s === "running" || isTerminal(s)

/** The event type of a status: `workflow.queued`, `workflow.completed`, ... */
export const eventTypeOf = (status: WorkflowStatus): string => `workflow.${status}`

/** How long a replaced secret still signs (both signatures are sent meanwhile). */
export const PREVIOUS_SECRET_VALIDITY = Duration.hours(24)
/** How long a delivery is retried before it is marked failed. */
export const DELIVERY_WINDOW = Duration.hours(24)
/** The longest accepted webhook URL. */
export const WEBHOOK_URL_MAX = 2048

/** A user's default endpoint and its signing secret(s). */
export const WebhookEndpoint = Schema.Struct({
  user_id: Schema.String,
  url: Schema.String,
  /** `whsec_` + base64 of 32 random bytes. */
  secret: Schema.String,
  /** The secret before the last rotation, still signing until `previous_expires_at`. */
  previous_secret: Schema.NullOr(Schema.String),
  previous_expires_at: Schema.NullOr(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotate({ identifier: "WebhookEndpoint" })
export interface WebhookEndpoint extends Schema.Schema.Type<typeof WebhookEndpoint> {}

/** The secrets that sign a delivery at `now`: the current one, and the previous one while it is valid. */
export const signingSecrets = (e: WebhookEndpoint, now: DateTime.Utc): ReadonlyArray<string> =>
  e.previous_secret !== null && e.previous_expires_at !== null && DateTime.isLessThan(now, e.previous_expires_at)
    ? [e.secret, e.previous_secret]
    : [e.secret]

/** `whsec_abcd...wxyz`: enough to tell secrets apart, not to use one. */
export const maskSecret = (secret: string): string => `${secret.slice(0, 10)}...${secret.slice(-4)}`

/** The endpoint as GET /v1/webhook shows it (the secret masked). */
export const WebhookView = Schema.Struct({
  url: Schema.String,
  secret: Schema.String.annotate({ description: "Masked; the whole secret is only in the answer that created it" }),
  previous_secret_expires_at: Schema.NullOr(Timestamp),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotate({ identifier: "Webhook" })
export interface WebhookView extends Schema.Schema.Type<typeof WebhookView> {}

export const toWebhookView = (e: WebhookEndpoint, now: DateTime.Utc): WebhookView => ({
  url: e.url,
  secret: maskSecret(e.secret),
  previous_secret_expires_at: signingSecrets(e, now).length > 1 ? e.previous_expires_at : null,
  created_at: e.created_at,
  updated_at: e.updated_at
})

export const DeliveryStatus = Schema.Literals(["pending", "delivered", "failed"])
export type DeliveryStatus = typeof DeliveryStatus.Type

/** One try at sending a delivery. */
export const DeliveryAttempt = Schema.Struct({
  at: Timestamp,
  /** The receiver's HTTP status (null: no answer). */
  status_code: Schema.NullOr(Int),
  /** Why it did not succeed (null when it did); at most 256 characters of the receiver's body. */
  error: Schema.NullOr(Schema.String),
  duration_ms: Int,
  /** When the next try is due (null: none will come). */
  next_attempt_at: Schema.NullOr(Timestamp)
}).annotate({ identifier: "DeliveryAttempt" })
export interface DeliveryAttempt extends Schema.Schema.Type<typeof DeliveryAttempt> {}

/** A delivery: one event to one URL, its body as sent (signed byte for byte), and its attempts. */
export const WebhookDelivery = Schema.Struct({
  /** Also the `webhook-id` header: the same on every attempt, for receivers to deduplicate. */
  id: Schema.String,
  workflow_id: Schema.String,
  user_id: Schema.String,
  url: Schema.String,
  type: Schema.String,
  payload: Schema.String,
  status: DeliveryStatus,
  created_at: Timestamp,
  next_attempt_at: Schema.NullOr(Timestamp),
  /** Retries stop after this (24 h after the event, or after a manual retry). */
  expires_at: Timestamp,
  delivered_at: Schema.NullOr(Timestamp),
  attempts: Schema.Array(DeliveryAttempt)
}).annotate({ identifier: "WebhookDeliveryRecord" })
export interface WebhookDelivery extends Schema.Schema.Type<typeof WebhookDelivery> {}

/** A delivery as GET /v1/workflow/{id}/deliveries lists it (the body is not repeated). */
export const DeliveryView = WebhookDelivery.mapFields(Struct.omit(["user_id", "payload"])).annotate({ identifier: "WebhookDelivery" })
export interface DeliveryView extends Schema.Schema.Type<typeof DeliveryView> {}

export const toDeliveryView = ({ payload: _p, user_id: _u, ...view }: WebhookDelivery): DeliveryView => view

/** The body of a delivery: `{type, timestamp, data}` with the workflow's summary as `data`. */
export const deliveryPayload = (status: WorkflowStatus, at: DateTime.Utc, summary: unknown): string =>
  JSON.stringify({ type: eventTypeOf(status), timestamp: DateTime.formatIso(at), data: summary })

/** A webhook URL: http(s), absolute, without credentials, at most 2048 characters. */
export const checkWebhookUrl = (field: string, value: string): Effect.Effect<string, ValidationError> => {
  const fail = (message: string) => Effect.fail(ValidationError.field(field, message))
  if (value.length > WEBHOOK_URL_MAX) return fail(`must be at most ${WEBHOOK_URL_MAX} characters`)
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return fail("must be an absolute http or https URL")
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return fail("must be an absolute http or https URL")
  if (url.username !== "" || url.password !== "") return fail("must not carry credentials")
  return Effect.succeed(url.href)
}

/** How an attempt ended for the store: delivered, to be tried again at a time, or given up. */
export type DeliveryOutcome =
  | { readonly _tag: "Delivered" }
  | { readonly _tag: "RetryAt"; readonly at: DateTime.Utc }
  | { readonly _tag: "Failed" }
