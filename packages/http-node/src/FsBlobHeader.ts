/**
 * The header line a blob file of the filesystem store starts with: `WESBLOB1 "image/png"\n`,
 * the blob's content type; its bytes follow.
 */
const MAGIC = "WESBLOB1 "

/** Longest header read back (a content type is far shorter). */
export const HEADER_MAX = 1024

export const header = (contentType: string) => Buffer.from(`${MAGIC}${JSON.stringify(contentType)}\n`)

/** The content type and the header's length of a file's first bytes; none for a file without one. */
export const parseHeader = (first: Buffer): { readonly contentType: string; readonly length: number } | undefined => {
  if (first.toString("latin1", 0, MAGIC.length) !== MAGIC) return undefined
  const end = first.indexOf(10)
  if (end === -1) return undefined
  try {
    const contentType: unknown = JSON.parse(first.toString("utf8", MAGIC.length, end))
    return typeof contentType === "string" ? { contentType, length: end + 1 } : undefined
  } catch {
    return undefined
  }
}

export const isNotFound = (e: unknown) => typeof e === "object" && e !== null && "code" in e && e.code === "ENOENT"
