/**
 * Inputs by URL: a `$file(<name>)` parameter given as an `https://` URL is fetched once, when the
 * workflow is created, by the platform (http-node provides it: under the address policy, with a
 * timeout, redirects followed hop by hop, each through the same policy). Without this service a
 * URL input is refused with a 400 ("URL inputs are not enabled").
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"

/** Why a URL could not be fetched. */
export const InputFetchReason = Schema.Literals([
  "invalid_url",
  "insecure",
  "private_address",
  "unreachable",
  "timeout",
  "status",
  "too_large",
  "too_many_redirects"
])
export type InputFetchReason = typeof InputFetchReason.Type

/** A URL input that could not be fetched; `message` says why, for the 400 the use case answers. */
export class InputFetchFailed extends Schema.TaggedError<InputFetchFailed>()("InputFetchFailed", {
  reason: InputFetchReason,
  message: Schema.String
}) {}

/** A fetched input whose answer headers arrived: its name, type and streamed body. */
export interface FetchedInput {
  /** From `Content-Disposition`, else the URL's last path segment (not yet sanitized). */
  readonly filename: string
  readonly content_type: string
  /** The body; fails past the size limit, on a stall or a broken connection. */
  readonly content: Stream.Stream<Uint8Array, InputFetchFailed>
}

export class InputFetcher extends Context.Service<InputFetcher, {
  /**
   * Asks for `url` (following redirects), succeeding once a 2xx answer's headers arrived; its
   * body may be at most `maxBytes` long. The connection lives until the scope closes.
   */
  readonly open: (url: string, options: { readonly maxBytes: number }) => Effect.Effect<FetchedInput, InputFetchFailed, Scope.Scope>
}>()("@wes/core/InputFetcher") {}

/** True for a parameter value that asks for a URL input (`https://...`, or `http://...` where allowed). */
export const isInputUrl = (value: string): boolean => /^https?:\/\//i.test(value)
