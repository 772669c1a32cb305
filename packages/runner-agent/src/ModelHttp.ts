/**
 * The HTTP client model downloads go through (issue 34, item 3): runner-client's guarded undici
 * Agent (a host on a private, loopback, link-local... address is refused unless allowed, and the
 * connection goes to the address checked), a 30 s connect timeout, and the per-request limits
 * `ModelDownload` applies (idle timeout, redirects, attempts).
 */
import { guardedAgent, type Resolver } from "@wes/runner-client"

export interface ModelHttpOptions {
  /** Allow model URLs on private, loopback, link-local... addresses. */
  readonly allowPrivateUrls: boolean
  /** How a refusal says it can be allowed (default names `--allow-private-model-urls`). */
  readonly privateUrlsFix?: string | undefined
  /** No connection within this long: a timeout (default 30 s). */
  readonly connectTimeoutMs?: number | undefined
  /** No answer headers or no body bytes for this long: a timeout (default 60 s). */
  readonly idleTimeoutMs?: number | undefined
  /** Redirects followed per request (default 5). */
  readonly maxRedirects?: number | undefined
  /** Attempts in a row that make no progress before a download fails (default 4). */
  readonly attempts?: number | undefined
  /** Wait before the n-th retry in a row: `retryDelayMs * 2^(n-1)` (default 1000). */
  readonly retryDelayMs?: number | undefined
  readonly resolve?: Resolver | undefined
  /** Which addresses are refused (default: private, loopback, link-local...); tests narrow it. */
  readonly denied?: ((address: string) => boolean) | undefined
}

export interface ModelHttp {
  readonly dispatcher: ReturnType<typeof guardedAgent>
  readonly idleTimeoutMs: number
  readonly maxRedirects: number
  readonly attempts: number
  readonly retryDelayMs: number
}

export const modelHttp = (options: ModelHttpOptions): ModelHttp => ({
  dispatcher: guardedAgent(
    options.allowPrivateUrls ? undefined : {
      words: {
        url: "model URL",
        host: "model URL host",
        refused: "model URL host",
        fix: options.privateUrlsFix ?? "wes-agent can be started with --allow-private-model-urls to allow them"
      },
      resolve: options.resolve,
      denied: options.denied
    },
    { connect: { timeout: options.connectTimeoutMs ?? 30_000 } }
  ),
  idleTimeoutMs: options.idleTimeoutMs ?? 60_000,
  maxRedirects: options.maxRedirects ?? 5,
  attempts: options.attempts ?? 4,
  retryDelayMs: options.retryDelayMs ?? 1000
})
