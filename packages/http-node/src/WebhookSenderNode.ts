/**
 * Sends webhooks with node's fetch: POST with the Standard Webhooks headers, a timeout (10 s by
 * default), no redirects followed (a 3xx is the answer), and at most 4 KB of the answer read (of
 * which at most 256 bytes are kept, for the delivery log). Unless private addresses are allowed
 * (WES_DEV, WES_WEBHOOK_ALLOW_PRIVATE=true), a URL whose host is or resolves to a private,
 * loopback, link-local or unspecified address is refused, at every attempt (DNS answers change).
 */
import { type SendResult, WebhookSender } from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { refusal, type Resolver, systemResolver } from "./RunnerAddressPolicy.js"
import { signWebhook } from "./WebhookSigning.js"

export const WEBHOOK_ALLOW_PRIVATE_SETTING = "WES_WEBHOOK_ALLOW_PRIVATE"
/** The most of an answer read, and kept. */
export const READ_LIMIT = 4096
export const KEEP_LIMIT = 256

export interface WebhookSendOptions {
  readonly timeout: Duration.Input
  /** Refuse private, loopback, link-local and unspecified addresses. */
  readonly denyPrivate: boolean
  readonly resolve?: Resolver | undefined
}

/** Why a webhook URL is refused (undefined: its every address is public). */
export const webhookRefusal = (url: string, resolve: Resolver): Promise<string | undefined> =>
  refusal(url, resolve, {
    url: "webhook URL",
    host: "webhook host",
    refused: "webhook host",
    fix: `the server's operator can allow such URLs with ${WEBHOOK_ALLOW_PRIVATE_SETTING}=true`
  })

/** Reads at most READ_LIMIT bytes of a body, then drops the rest; returns the first KEEP_LIMIT as text. */
const readCapped = async (res: Response): Promise<string> => {
  if (res.body === null) return ""
  const reader = res.body.getReader()
  const chunks: Array<Uint8Array> = []
  let size = 0
  try {
    while (size < READ_LIMIT) {
      const { done, value } = await reader.read()
      if (done) break
      chunks.push(value)
      size += value.byteLength
    }
  } finally {
    await reader.cancel().catch(() => undefined)
  }
  const bytes = Buffer.concat(chunks).subarray(0, KEEP_LIMIT)
  return bytes.toString("utf8").replace(/\uFFFD+$/, "")
}

const describe = (e: unknown, timeoutMs: number): string => {
  if (e instanceof Error && e.name === "TimeoutError") return `no answer within ${timeoutMs} ms`
  if (e instanceof Error && e.name === "AbortError") return "aborted"
  const cause = e instanceof Error && e.cause instanceof Error ? e.cause : e
  const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : undefined
  return code ?? (cause instanceof Error ? cause.message : String(cause)).slice(0, KEEP_LIMIT)
}

export const webhookSenderNode = (options: WebhookSendOptions): Layer.Layer<WebhookSender> =>
  Layer.succeed(WebhookSender, WebhookSender.of({
    send: (message) =>
      // Interrupting the send (shutdown) aborts the request; the delivery, still claimed, is sent again later.
      Effect.promise(async (interrupted): Promise<SendResult> => {
        if (options.denyPrivate) {
          const refused = await webhookRefusal(message.url, options.resolve ?? systemResolver)
          if (refused !== undefined) return { _tag: "Refused", error: refused }
        }
        const timeoutMs = Duration.toMillis(options.timeout)
        const headers = signWebhook(message.secrets, message.id, DateTime.toDateUtc(message.timestamp), message.payload)
        try {
          const res = await fetch(message.url, {
            method: "POST",
            headers: { ...headers, "content-type": "application/json", "user-agent": "wes-webhooks" },
            body: message.payload,
            redirect: "manual",
            signal: AbortSignal.any([interrupted, AbortSignal.timeout(timeoutMs)])
          })
          const body = await readCapped(res)
          return { _tag: "Answered", status: res.status, body }
        } catch (e) {
          return { _tag: "NoAnswer", error: describe(e, timeoutMs) }
        }
      })
  }))
