/**
 * The answers of the output downloads: one file (304, a redirect to the store, 206, 416 or the
 * whole file: OutputDownload.ts decides) and every file as one archive (OutputArchive.ts).
 */
import type { OutputArchive, StorageError, StoredOutput, OutputNotFound } from "@wes/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { ServerResponse } from "node:http"
import { fileDownload } from "./FileDownload.js"
import { localFileOf } from "./LocalFileContent.js"
import { archiveName, zipArchive } from "./OutputArchive.js"
import { dispositionOf, type DownloadHeaders, fileHeaders, planDownload } from "./OutputDownload.js"

/**
 * Whether a download answers with a redirect to the store's own short-lived URL when the store
 * serves one (`WES_BLOB_REDIRECT`), and how long that URL serves. Default: streamed through WES.
 */
export const OutputDelivery = Context.Reference<{ readonly redirect: boolean; readonly signedUrlSeconds: number }>(
  "@wes/http-node/OutputDelivery",
  { defaultValue: () => ({ redirect: false, signedUrlSeconds: 900 }) }
)

const logged = <E extends { readonly message: string }>(stream: Stream.Stream<Uint8Array, E>, what: Record<string, string>) =>
  stream.pipe(Stream.tapError((e) => Effect.logError("output stream failed", { ...what, error: e.message })))

/**
 * The answer to a download of `stored` with these request headers. With node's response (`sink`),
 * a blob in a local file is sent from its file through one reused buffer (FileDownload.ts).
 */
export const outputResponse = (
  stored: StoredOutput,
  headers: DownloadHeaders,
  delivery: typeof OutputDelivery.Service,
  sink?: ServerResponse | undefined
): Effect.Effect<HttpServerResponse.HttpServerResponse, OutputNotFound | StorageError> =>
  Effect.gen(function*() {
    const { output } = stored
    const common = fileHeaders(output)
    const plan = planDownload(headers, output)
    if (plan._tag === "NotModified") return HttpServerResponse.empty({ status: 304, headers: common })
    if (delivery.redirect) {
      const url = yield* stored.signedUrl({ expires_in_seconds: delivery.signedUrlSeconds, content_disposition: common["content-disposition"] })
      // The URL is short-lived: neither the redirect nor where it points may be kept.
      if (Option.isSome(url)) return HttpServerResponse.redirect(url.value, { status: 307, headers: { "cache-control": "private, no-store" } })
    }
    if (plan._tag === "Unsatisfiable") {
      return HttpServerResponse.jsonUnsafe(
        { status: 416, message: `Range not satisfiable: the output has ${output.size} bytes` },
        { status: 416, headers: { "content-range": `bytes */${output.size}`, "accept-ranges": "bytes", "etag": common.etag } }
      )
    }
    const range = plan._tag === "Partial" ? plan.range : undefined
    const blob = yield* stored.read(range)
    const file = sink === undefined ? undefined : localFileOf(blob.stream)
    const stream = logged(file === undefined || sink === undefined ? blob.stream : fileDownload(file, sink), { output_id: output.id })
    return range === undefined
      ? HttpServerResponse.stream(stream, { contentType: blob.content_type, contentLength: blob.size, headers: common })
      : HttpServerResponse.stream(stream, {
        status: 206,
        contentType: blob.content_type,
        contentLength: range.end - range.start + 1,
        headers: { ...common, "content-range": `bytes ${range.start}-${range.end}/${blob.size}` }
      })
  })

/** Every output of the workflow as one ZIP archive, streamed, named after the workflow. */
export const archiveResponse = (archive: OutputArchive): HttpServerResponse.HttpServerResponse => {
  const { size, stream } = zipArchive(archive)
  return HttpServerResponse.stream(logged(stream, { workflow_id: archive.workflow.id }), {
    contentType: "application/zip",
    ...(size >= 0 ? { contentLength: size } : {}),
    headers: {
      "content-disposition": dispositionOf(archiveName(archive.workflow), "application/zip"),
      "cache-control": "private, no-cache",
      "x-content-type-options": "nosniff"
    }
  })
}
