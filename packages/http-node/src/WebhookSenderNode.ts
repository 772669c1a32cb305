/**
 * Sends webhooks with undici's fetch: POST with the Standard Webhooks headers, a timeout (10 s by
 * default), no redirects followed (a 3xx is the answer), and at most 4 KB of the answer read (of
 * which at most 256 bytes are kept, for the delivery log). Unless private addresses are allowed
 * (WES_DEV, WES_WEBHOOK_ALLOW_PRIVATE=true), a URL whose host is or resolves to a private,
 * loopback, link-local or unspecified address is refused, at every connection (DNS answers
 * change): the sender's pool resolves a name once and connects to the address it checked
 * (GuardedConnect.ts in @wes/runner-client), so a name that answers differently the second time
 * cannot reach the server's own network.
 */
import { type SendResult, WebhookSender } from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type AddressGuard, guardedAgent, refusedBy } from "@wes/runner-client"
import { fetch } from "undici"
import { refusal, type RefusalWords, type Resolver } from "./RunnerAddressPolicy.js"
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
  /** Which addresses are refused (default: private, loopback, link-local, unspecified...); tests narrow it. */
  readonly denied?: ((address: string) => boolean) | undefined
}

const WEBHOOK_WORDS: RefusalWords = {
  url: "webhook URL",
  host: "webhook host",
  refused: "webhook host",
  fix: `the server's operator can allow such URLs with ${WEBHOOK_ALLOW_PRIVATE_SETTING}=true`
}

/** Why a webhook URL is refused (undefined: its every address is public). */
export const webhookRefusal = (url: string, resolve: Resolver): Promise<string | undefined> => refusal(url, resolve, WEBHOOK_WORDS)

/** The guard of webhook deliveries' connections. */
export const webhookGuard = (resolve?: Resolver, denied?: (address: string) => boolean): AddressGuard => ({ words: WEBHOOK_WORDS, resolve, denied })

/** Reads at most READ_LIMIT bytes of a body, then drops the rest; returns the first KEEP_LIMIT as text. */
const readCapped = async (res: Awaited<ReturnType<typeof fetch>>): Promise<string> => {
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
  Layer.effect(WebhookSender, Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => guardedAgent(options.denyPrivate ? webhookGuard(options.resolve, options.denied) : undefined)),
      (agent) => Effect.promise(() => agent.destroy())
    ),
    (dispatcher) => WebhookSender.of({
      send: (message) =>
        // Interrupting the send (shutdown) aborts the request; the delivery, still claimed, is sent again later.
        Effect.promise(async (interrupted): Promise<SendResult> => {
          const timeoutMs = Duration.toMillis(options.timeout)
          const headers = signWebhook(message.secrets, message.id, DateTime.toDateUtc(message.timestamp), message.payload)
          try {
            const res = await fetch(message.url, {
              dispatcher,
              method: "POST",
              headers: { ...headers, "content-type": "application/json", "user-agent": "wes-webhooks" },
              body: message.payload,
              redirect: "manual",
              signal: AbortSignal.any([interrupted, AbortSignal.timeout(timeoutMs)])
            })
            const body = await readCapped(res)
            return { _tag: "Answered", status: res.status, body }
          } catch (e) {
            // The address policy refused the host: not retried (it would be refused again).
            const refused = refusedBy(e)
            return refused !== undefined ? { _tag: "Refused", error: refused.message } : { _tag: "NoAnswer", error: describe(e, timeoutMs) }
          }
        })
    })
  ))
