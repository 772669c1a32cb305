/**
 * Inputs by URL (issue 33, item 3): a `$file(<name>)` parameter sent as an `http(s)://` URL text
 * instead of a file part is fetched once, at create (or rerun) time, synchronously within the
 * request, through the `InputFetcher` port, and streamed into the blob store as the input. Its
 * bytes count with the request's uploaded parts against the tier's `max_upload_bytes`. Every
 * failure is a 400 naming the parameter, the URL and the reason. A rerun that does not send the
 * parameter again reuses the stored input (no refetch).
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import { StorageError, ValidationError } from "../../domain/Errors.js"
import { fieldName, type Placeholder, type SuppliedParam } from "../../domain/Placeholders.js"
import { BlobStore, inputBlobKey, isBlobBytes } from "../../ports/BlobStore.js"
import { type InputFetchFailed, InputFetcher, isInputUrl } from "../../ports/InputFetcher.js"
import type { UploadedFile } from "./Inputs.js"

/** A `$file` parameter given as a URL. */
export interface UrlInput {
  readonly url: string
}

/** What a `$file` parameter is given as: a file part, or a URL. */
export type InputFile = UploadedFile | UrlInput

export const isUrlInput = (file: InputFile): file is UrlInput => "url" in file

/** The answer of a server that has no `InputFetcher`. */
export const URL_INPUTS_DISABLED = "URL inputs are not enabled on this server; send the file as a form part"

/** `$file` parameters sent as URL text become URL inputs; every other parameter is left as sent. */
export const withUrlInputs = (
  placeholders: ReadonlyArray<Placeholder>,
  params: ReadonlyArray<SuppliedParam<UploadedFile>>
): ReadonlyArray<SuppliedParam<InputFile>> => {
  const files = new Set(placeholders.filter((p) => p.kind === "file").map(fieldName))
  return params.map((p) =>
    p.value._tag === "Text" && files.has(p.field) && isInputUrl(p.value.text.trim())
      ? { field: p.field, value: { _tag: "File", file: { url: p.value.text.trim() } } }
      : p
  )
}

/** Bytes of the request's uploaded parts (what URL inputs share the limit with). */
export const uploadedBytes = (files: ReadonlyArray<InputFile>): number =>
  files.reduce((sum, f) => {
    if (isUrlInput(f)) return sum
    if (f.size !== undefined) return sum + f.size
    return isBlobBytes(f.content) ? f.content.reduce((n, c) => n + c.byteLength, sum) : sum
  }, 0)

const refused = (name: string, url: string, reason: string) =>
  new ValidationError({
    message: `Parameter validation failed: $${name} could not be fetched from ${url}: ${reason}`,
    details: [{ field: `$${name}`, message: `could not be fetched from ${url}: ${reason}` }]
  })

/** How a URL input is stored: its budget, and how its limit is named when it is exceeded. */
export interface UrlInputBudget {
  /** Bytes still allowed this request (shared by its URL inputs, in turn). */
  readonly left: Ref.Ref<number>
  /** The reason a too-large input is refused with (naming the tier's limit). */
  readonly tooLarge: string
}

export const makeUrlInputs = Effect.gen(function*() {
  const fetcher = yield* Effect.serviceOption(InputFetcher)
  const blobs = yield* BlobStore
  const reasonOf = (budget: UrlInputBudget, e: InputFetchFailed) => (e.reason === "too_large" ? budget.tooLarge : e.message)

  /**
   * Fetches `url` into the input blob of parameter `name` of workflow `workflowId` (the key);
   * the blob is removed unless the scope ends in success.
   */
  const store = (workflowId: string, name: string, url: string, budget: UrlInputBudget) =>
    Effect.gen(function*() {
      if (Option.isNone(fetcher)) return yield* Effect.fail(refused(name, url, URL_INPUTS_DISABLED))
      const maxBytes = Math.max(0, yield* Ref.get(budget.left))
      const opened = yield* Effect.mapError(fetcher.value.open(url, { maxBytes }), (e) => refused(name, url, reasonOf(budget, e)))
      const key = inputBlobKey(workflowId, name, opened.filename)
      // The store sees a StorageError; the 400 says what really happened to the fetch.
      const failure = yield* Ref.make(Option.none<InputFetchFailed>())
      const content = opened.content.pipe(
        Stream.tapError((e) => Ref.set(failure, Option.some(e))),
        Stream.mapError((e) => new StorageError({ message: `fetching ${url}: ${e.message}` }))
      )
      const put = blobs.put(key, content, opened.content_type).pipe(
        Effect.catchTag("StorageError", (e) =>
          Effect.flatMap(Ref.get(failure), (f): Effect.Effect<never, StorageError | ValidationError> =>
            Option.isNone(f) ? Effect.fail(e) : Effect.fail(refused(name, url, reasonOf(budget, f.value))))),
        Effect.onError(() => Effect.ignore(blobs.delete(key)))
      )
      const written = yield* Effect.acquireRelease(put, (_, exit) => (exit._tag === "Success" ? Effect.void : Effect.ignore(blobs.delete(key))))
      yield* Ref.update(budget.left, (n) => n - written)
      return key
    })
  return { store }
})
