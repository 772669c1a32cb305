/**
 * `InputFetcher` on Node (URL inputs, issue 33): a GET through undici on a guarded pool (a host
 * name is resolved once per connection and refused on a private, loopback, link-local or
 * unspecified address unless allowed; the connection goes to the address checked), `https://`
 * only unless `http://` is allowed, redirects followed by hand (at most `maxRedirects` hops, each
 * checked the same way), no connection, answer or body bytes for `timeout` is a timeout, and the
 * whole fetch is bounded by `maxTime`. The body is streamed to the caller, counted against its limit.
 */
import { type FetchedInput, InputFetcher, InputFetchFailed, type InputFetchReason } from "@wes/core"
import { type AddressGuard, guardedAgent, refusedBy, type Resolver } from "@wes/runner-client"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { type Dispatcher, request } from "undici"
import { inputContentType, inputFilename } from "./InputNames.js"

export const INPUT_ALLOW_PRIVATE_SETTING = "WES_INPUT_URL_ALLOW_PRIVATE"
export const INPUT_ALLOW_HTTP_SETTING = "WES_INPUT_URL_ALLOW_HTTP"

export interface InputFetchOptions {
  /** No connection, no answer headers, or no body bytes for this long: a timeout (WES_INPUT_URL_TIMEOUT). */
  readonly timeout: Duration.Input
  /** The whole fetch, body included (WES_INPUT_URL_MAX_TIME). */
  readonly maxTime: Duration.Input
  /** Allow private, loopback, link-local and unspecified addresses (WES_INPUT_URL_ALLOW_PRIVATE). */
  readonly allowPrivate: boolean
  /** Allow `http://` URLs, and redirects to them (WES_INPUT_URL_ALLOW_HTTP). */
  readonly allowHttp: boolean
  /** Redirects followed (default 5). */
  readonly maxRedirects?: number | undefined
  readonly resolve?: Resolver | undefined
  /** Which addresses are refused (default: private, loopback, link-local...); tests narrow it. */
  readonly denied?: ((address: string) => boolean) | undefined
}

const guardOf = (o: InputFetchOptions): AddressGuard | undefined =>
  o.allowPrivate ? undefined : {
    words: { url: "input URL", host: "input URL host", refused: "input URL host", fix: `the server's operator can allow such URLs with ${INPUT_ALLOW_PRIVATE_SETTING}=true` },
    resolve: o.resolve,
    denied: o.denied
  }

const failed = (reason: InputFetchReason, message: string) => new InputFetchFailed({ reason, message })

const TIMEOUT_CODES = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CONNECT_TIMEOUT"])

/** What a failed request or body read means, in the 400's words. */
const classify = (o: InputFetchOptions, deadline: AbortSignal) => (e: unknown): InputFetchFailed => {
  if (e instanceof InputFetchFailed) return e
  const refused = refusedBy(e)
  if (refused !== undefined) return failed("private_address", refused.message)
  if (deadline.aborted) return failed("timeout", `not fetched within ${Duration.format(Duration.fromInputUnsafe(o.maxTime))}`)
  const code = typeof e === "object" && e !== null ? (e as { code?: unknown }).code : undefined
  if (typeof code === "string" && TIMEOUT_CODES.has(code)) return failed("timeout", `no answer within ${Duration.format(Duration.fromInputUnsafe(o.timeout))}`)
  return failed("unreachable", `the server could not be reached${typeof code === "string" ? ` (${code})` : ""}`)
}

/** `url` parsed, if its scheme is allowed. */
const target = (o: InputFetchOptions, url: string): Effect.Effect<URL, InputFetchFailed> => {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return Effect.fail(failed("invalid_url", "it is not a valid URL"))
  }
  if (parsed.protocol === "https:" || (parsed.protocol === "http:" && o.allowHttp)) return Effect.succeed(parsed)
  return Effect.fail(parsed.protocol === "http:"
    ? failed("insecure", `only https:// URLs are fetched (the server's operator can allow http:// with ${INPUT_ALLOW_HTTP_SETTING}=true)`)
    : failed("invalid_url", "only https:// URLs are fetched"))
}

/** Drops an answer's body we will not read (its abort is expected: nobody else listens for it). */
const discard = (body: Dispatcher.ResponseData["body"]) => {
  body.on("error", () => undefined)
  body.destroy()
}

const header = (value: string | ReadonlyArray<string> | undefined) => (Array.isArray(value) ? value[0] : value) as string | undefined

/** The body, counted against `maxBytes`. */
const bodyStream = (body: Dispatcher.ResponseData["body"], maxBytes: number, onError: (e: unknown) => InputFetchFailed) => {
  let seen = 0
  return Stream.fromAsyncIterable(body as AsyncIterable<Uint8Array>, onError).pipe(
    Stream.mapEffect((chunk) => {
      seen += chunk.byteLength
      if (seen <= maxBytes) return Effect.succeed(chunk)
      discard(body)
      return Effect.fail(failed("too_large", `it is larger than ${maxBytes} bytes`))
    })
  )
}

const open = (o: InputFetchOptions, dispatcher: Dispatcher) => (url: string, { maxBytes }: { readonly maxBytes: number }) =>
  Effect.gen(function*() {
    const deadline = AbortSignal.timeout(Math.max(1, Duration.toMillis(Duration.fromInputUnsafe(o.maxTime))))
    const wait = Math.max(1, Duration.toMillis(Duration.fromInputUnsafe(o.timeout)))
    const onError = classify(o, deadline)
    let current = url
    for (let hop = 0; ; hop++) {
      const at = yield* target(o, current)
      const response = yield* Effect.tryPromise({
        try: (signal) =>
          request(at, {
            dispatcher,
            method: "GET",
            headers: { "user-agent": "wes-inputs", accept: "*/*" },
            signal: AbortSignal.any([signal, deadline]),
            headersTimeout: wait,
            bodyTimeout: wait
          }),
        catch: onError
      })
      yield* Effect.addFinalizer(() => Effect.sync(() => discard(response.body)))
      const status = response.statusCode
      const location = header(response.headers["location"])
      if (status >= 300 && status < 400 && location !== undefined) {
        discard(response.body)
        if (hop >= (o.maxRedirects ?? 5)) return yield* Effect.fail(failed("too_many_redirects", `more than ${o.maxRedirects ?? 5} redirects`))
        current = new URL(location, at).href
        continue
      }
      if (status < 200 || status >= 300) {
        discard(response.body)
        return yield* Effect.fail(failed("status", `the server answered HTTP ${status}`))
      }
      const length = Number(header(response.headers["content-length"]) ?? Number.NaN)
      if (length > maxBytes) {
        discard(response.body)
        return yield* Effect.fail(failed("too_large", `it is ${length} bytes, more than ${maxBytes}`))
      }
      const fetched: FetchedInput = {
        filename: inputFilename(at.href, header(response.headers["content-disposition"])),
        content_type: inputContentType(header(response.headers["content-type"])),
        content: bodyStream(response.body, maxBytes, onError)
      }
      return fetched
    }
  })

/** The fetcher, its connection pool open while the layer is. */
export const inputFetcherNode = (options: InputFetchOptions): Layer.Layer<InputFetcher> =>
  Layer.effect(InputFetcher, Effect.map(
    Effect.acquireRelease(
      Effect.sync(() => guardedAgent(guardOf(options), { connect: { timeout: Math.max(1, Duration.toMillis(Duration.fromInputUnsafe(options.timeout))) } })),
      (agent) => Effect.promise(() => agent.destroy())
    ),
    (dispatcher) => InputFetcher.of({ open: open(options, dispatcher) })
  ))
