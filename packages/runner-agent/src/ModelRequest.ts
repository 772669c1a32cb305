/**
 * One GET of a model URL from byte `from` (issue 34, item 3): through the guarded client,
 * redirects followed by hand (at most `maxRedirects`, each hop connecting through the same guard),
 * `Range: bytes=<from>-` on every hop when resuming. Answers the body with where it starts (a 206
 * at `from`, or a 200 from zero: the server ignored the range) and the file's whole size when
 * known, or that the range was unsatisfiable (the partial may already be whole). Anything else
 * fails: the status, a refused address, a timeout, no connection.
 */
import type { Readable } from "node:stream"
import { refusedBy } from "@wes/runner-client"
import { describeError, ModelProvisionFailed } from "./ModelErrors.js"
import type { ModelHttp } from "./ModelHttp.js"

export type Opened =
  | { readonly kind: "body"; readonly body: Readable; readonly start: number; readonly total: number | null }
  | { readonly kind: "unsatisfiable"; readonly total: number | null }

const TIMEOUT_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT"])

/** What a failed request or body read means. */
export const requestFailure = (http: ModelHttp, e: unknown, signal: AbortSignal | undefined): ModelProvisionFailed => {
  if (e instanceof ModelProvisionFailed) return e
  if (signal?.aborted === true) return new ModelProvisionFailed("cancelled", "provisioning was cancelled", { cause: e })
  const refused = refusedBy(e)
  if (refused !== undefined) return new ModelProvisionFailed("refused", refused.message, { cause: e })
  const code = typeof e === "object" && e !== null ? (e as { code?: unknown }).code : undefined
  // Node's file-system errors name their path; the network's do not.
  if (typeof (e as { path?: unknown } | null)?.path === "string") return new ModelProvisionFailed("io", `the disk refused it: ${describeError(e)}`, { cause: e })
  if (typeof code === "string" && TIMEOUT_CODES.has(code)) {
    const idle = http.idleTimeoutMs < 1000 ? `${http.idleTimeoutMs} ms` : `${Math.round(http.idleTimeoutMs / 1000)} s`
    const why = code === "UND_ERR_CONNECT_TIMEOUT" ? "its connection timed out" : `no data for ${idle}`
    return new ModelProvisionFailed("unreachable", `the download stalled: ${why}`, { cause: e, transient: true })
  }
  return new ModelProvisionFailed("unreachable", `the download failed: ${describeError(e)}`, { cause: e, transient: true })
}

const header = (value: string | ReadonlyArray<string> | undefined): string | undefined => (Array.isArray(value) ? value[0] : value as string | undefined)

/** Drops an answer's body that will not be read (its connection is then not kept waiting). */
export const discard = (body: Readable) => {
  body.on("error", () => undefined) // a dropped answer's abort is expected; nobody reads it
  body.destroy()
}

const contentLength = (value: string | undefined): number | null => {
  const n = value === undefined ? Number.NaN : Number(value)
  return Number.isSafeInteger(n) && n >= 0 ? n : null
}

export const openModelUrl = async (http: ModelHttp, url: string, from: number, signal: AbortSignal | undefined): Promise<Opened> => {
  let current = new URL(url)
  for (let hop = 0; ; hop++) {
    if (current.protocol !== "http:" && current.protocol !== "https:") {
      throw new ModelProvisionFailed("http_status", `a redirect led to a ${current.protocol} URL, which is not followed`)
    }
    const response = await http.dispatcher.request({
      origin: current.origin,
      path: `${current.pathname}${current.search}`,
      method: "GET",
      headers: { "user-agent": "wes-agent", accept: "*/*", "accept-encoding": "identity", ...(from > 0 ? { range: `bytes=${from}-` } : {}) },
      ...(signal === undefined ? {} : { signal }),
      headersTimeout: http.idleTimeoutMs,
      bodyTimeout: http.idleTimeoutMs
    }).catch((e: unknown) => {
      throw requestFailure(http, e, signal)
    })
    const status = response.statusCode
    const body = response.body as Readable
    const location = header(response.headers["location"])
    if (status >= 300 && status < 400 && location !== undefined) {
      discard(body)
      if (hop >= http.maxRedirects) throw new ModelProvisionFailed("http_status", `more than ${http.maxRedirects} redirects`)
      current = new URL(location, current)
      continue
    }
    const range = /^bytes (?:(\d+)-\d+|\*)\/(\d+|\*)$/.exec(header(response.headers["content-range"]) ?? "")
    const total = range?.[2] === undefined || range[2] === "*" ? null : Number(range[2])
    if (status === 416) {
      discard(body)
      return { kind: "unsatisfiable", total }
    }
    if (status === 200) return { kind: "body", body, start: 0, total: contentLength(header(response.headers["content-length"])) }
    if (status === 206 && range?.[1] !== undefined && Number(range[1]) === from) return { kind: "body", body, start: from, total }
    discard(body)
    if (status === 206) throw new ModelProvisionFailed("http_status", `the server answered a range that was not asked for (${header(response.headers["content-range"]) ?? "none"})`)
    throw new ModelProvisionFailed("http_status", `the server answered HTTP ${status}`, { transient: status >= 500 || status === 408 || status === 429 })
  }
}
