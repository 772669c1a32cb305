/**
 * Standard Webhooks signing and verification, by the `standardwebhooks` package (the
 * specification's reference library): `webhook-signature` is `v1,` + base64 HMAC-SHA256 of
 * `id.timestamp.body` under the secret (`whsec_` + base64); while a rotated-out secret is still
 * valid, one signature per secret, space-separated. `verifyWebhook` is for receivers in Node.
 */
import { Webhook } from "standardwebhooks"

/** The three headers of a delivery. */
export interface WebhookHeaders {
  readonly "webhook-id": string
  readonly "webhook-timestamp": string
  readonly "webhook-signature": string
}

/** Headers for `body` sent as message `id` at `timestamp`, signed with every secret. */
export const signWebhook = (secrets: ReadonlyArray<string>, id: string, timestamp: Date, body: string): WebhookHeaders => ({
  "webhook-id": id,
  "webhook-timestamp": String(Math.floor(timestamp.getTime() / 1000)),
  "webhook-signature": secrets.map((s) => new Webhook(s).sign(id, timestamp, body)).join(" ")
})

/** A WES webhook body: `type` (`workflow.<status>`), `timestamp` (ISO 8601) and `data` (the workflow summary). */
export interface WebhookEvent {
  readonly type: string
  readonly timestamp: string
  readonly data: {
    readonly id: string
    readonly name: string
    readonly status: string
    readonly tags: ReadonlyArray<string>
    readonly created_at: string
    readonly updated_at: string
    readonly started_at: string | null
    readonly completed_at: string | null
  }
}

/**
 * Verifies a delivery with your secret and returns its parsed body; throws when the signature
 * does not match any signature sent, or the timestamp is more than 5 minutes away from now
 * (replays). Pass the body exactly as received (the raw text, not re-serialized JSON), and the
 * request's headers (a plain object or a `Headers`). Deduplicate by `webhook-id`: a delivery may
 * come more than once.
 */
export const verifyWebhook = (
  secret: string,
  body: string | Buffer,
  headers: Headers | Record<string, string | ReadonlyArray<string> | undefined>
): WebhookEvent => {
  const get = (name: string): string => {
    const v = headers instanceof Headers ? headers.get(name) : headers[name]
    return typeof v === "string" ? v : Array.isArray(v) ? String(v[0]) : ""
  }
  return new Webhook(secret).verify(body, {
    "webhook-id": get("webhook-id"),
    "webhook-timestamp": get("webhook-timestamp"),
    "webhook-signature": get("webhook-signature")
  }) as WebhookEvent
}
