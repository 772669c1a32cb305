/**
 * What a download of one output answers, as HTTP serves a file (RFC 9110): a strong `ETag` (the
 * output's id: an output never changes once stored), `If-None-Match` -> 304, one byte `Range` ->
 * 206 (`If-Range` honoured when it is the ETag), a range past the end -> 416, several ranges ->
 * the whole file; `Content-Disposition` with the original file name (RFC 6266/8187). Parsing by
 * the libraries `send` and express use (range-parser, fresh, content-disposition).
 */
import type { BlobRange, WorkflowOutput } from "@wes/core"
import { create as createDisposition } from "content-disposition"
import fresh from "fresh"
import parseRange from "range-parser"

/** The request headers a download reads. */
export interface DownloadHeaders {
  readonly range?: string | undefined
  readonly "if-none-match"?: string | undefined
  readonly "if-range"?: string | undefined
}

export type DownloadPlan =
  | { readonly _tag: "NotModified" }
  | { readonly _tag: "Whole" }
  | { readonly _tag: "Partial"; readonly range: BlobRange }
  | { readonly _tag: "Unsatisfiable" }

const whole: DownloadPlan = { _tag: "Whole" }

/** The output's strong entity tag: its id, unique and never reused for other bytes. */
export const etagOf = (output: Pick<WorkflowOutput, "id">): string => `"${output.id}"`

/**
 * The range of `size` bytes a `Range` header asks for. A suffix longer than the file is the whole
 * file (RFC 9110 14.1.3; range-parser refuses it).
 */
const rangeOf = (size: number, header: string): DownloadPlan => {
  const suffix = /^\s*bytes\s*=\s*-\s*(\d+)\s*$/i.exec(header)
  if (suffix !== null && size > 0 && Number(suffix[1]) >= size) return { _tag: "Partial", range: { start: 0, end: size - 1 } }
  const ranges = parseRange(size, header, { combine: true })
  if (ranges === -1) return { _tag: "Unsatisfiable" }
  // Malformed, another unit, or several ranges: the whole file (RFC 9110 allows ignoring Range).
  if (ranges === -2 || ranges.type.toLowerCase() !== "bytes" || ranges.length !== 1) return whole
  return { _tag: "Partial", range: { start: ranges[0]!.start, end: ranges[0]!.end } }
}

/** What to answer a request with these headers for `output`. */
export const planDownload = (headers: DownloadHeaders, output: Pick<WorkflowOutput, "id" | "size">): DownloadPlan => {
  const etag = etagOf(output)
  const noneMatch = headers["if-none-match"]
  if (noneMatch !== undefined && fresh({ "if-none-match": noneMatch }, { etag })) return { _tag: "NotModified" }
  if (headers.range === undefined) return whole
  // If-Range: the range only for the same (strongly compared) representation; a date never
  // matches (no Last-Modified is sent).
  const ifRange = headers["if-range"]
  if (ifRange !== undefined && ifRange.trim() !== etag) return whole
  return rangeOf(output.size, headers.range)
}

/** Shown in place by a browser: images (not SVG, which may carry scripts), video and audio. */
const isInline = (contentType: string) =>
  /^(image|video|audio)\//i.test(contentType) && !/^image\/svg/i.test(contentType)

/**
 * `Content-Disposition` for a file named `filename` (as the runner named it): `inline` for media a
 * browser plays, else `attachment`; an ASCII `filename=` (other characters `_`) and, for any other
 * name, `filename*=UTF-8''...`.
 */
export const dispositionOf = (filename: string, contentType: string): string =>
  createDisposition(filename, {
    type: isInline(contentType) ? "inline" : "attachment",
    fallback: filename.replace(/[^\x20-\x7e]|["\\%]/g, "_")
  })

/** Headers every answer of a download carries. */
export const fileHeaders = (output: Pick<WorkflowOutput, "id" | "filename" | "content_type">) => ({
  "etag": etagOf(output),
  "accept-ranges": "bytes",
  "content-disposition": dispositionOf(output.filename, output.content_type),
  // Revalidated (a 304 with the ETag) rather than kept: a cached copy outlives a revoked token.
  "cache-control": "private, no-cache",
  "x-content-type-options": "nosniff"
})
