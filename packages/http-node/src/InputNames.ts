/** The name and type of a URL input, from its answer: `Content-Disposition`, else the URL's path; the body's `Content-Type`. */

/** `filename*=UTF-8''...` (RFC 6266/8187) first, then `filename="..."` or `filename=token`. */
const fromDisposition = (header: string): string | undefined => {
  const extended = /filename\*\s*=\s*([^']*)'[^']*'([^;]+)/i.exec(header)
  if (extended !== null) {
    try {
      return decodeURIComponent(extended[2]!.trim())
    } catch {
      // A broken encoding: the plain form, if any.
    }
  }
  const plain = /filename\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/i.exec(header)
  return plain === null ? undefined : (plain[1]?.replace(/\\(.)/g, "$1") ?? plain[2])
}

/** The URL's last path segment, decoded. */
const fromPath = (url: string): string | undefined => {
  const last = new URL(url).pathname.split("/").pop() ?? ""
  try {
    return decodeURIComponent(last)
  } catch {
    return last
  }
}

/**
 * The input's file name, before sanitizing (the blob key and the runner's input path sanitize
 * it: base name only, safe characters): "input" when neither the answer nor the URL names one.
 */
export const inputFilename = (url: string, disposition: string | undefined): string => {
  const named = (disposition === undefined ? undefined : fromDisposition(disposition)) ?? fromPath(url)
  return named === undefined || named.trim() === "" ? "input" : named
}

/** The media type the answer declares, without parameters (none: application/octet-stream). */
export const inputContentType = (header: string | undefined): string => {
  const type = header?.split(";")[0]?.trim().toLowerCase() ?? ""
  return /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/.test(type) ? type : "application/octet-stream"
}
