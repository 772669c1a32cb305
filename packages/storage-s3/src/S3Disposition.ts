/**
 * The `Content-Disposition` a presigned URL asks S3 to answer with (`response-content-disposition`):
 * the same as WES's own downloads, `inline` for media a browser plays (not SVG), else
 * `attachment`, with the original file name.
 */
import { create as createDisposition } from "content-disposition"

const isInline = (contentType: string) => /^(image|video|audio)\//i.test(contentType) && !/^image\/svg/i.test(contentType)

export const dispositionOf = (filename: string, contentType: string): string =>
  createDisposition(filename, {
    type: isInline(contentType) ? "inline" : "attachment",
    fallback: filename.replace(/[^\x20-\x7e]|["\\%]/g, "_")
  })
