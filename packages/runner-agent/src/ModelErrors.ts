/**
 * Why a model file could not be placed (issue 34, item 3). One error type with the reason as a
 * literal, so provisioning turns any of them into the one `failed` line that names the file.
 */

export type ModelFailure =
  /** The declaration is unusable (not a model folder, not a file name, declared twice differently). */
  | "invalid"
  /** The URL's host is on an address the agent refuses (private, loopback...). */
  | "refused"
  /** The download could not be made: no connection, a timeout, a cut that did not resume. */
  | "unreachable"
  /** The server answered with an HTTP error (or a redirect too many). */
  | "http_status"
  /** The downloaded bytes are not the declared sha256. */
  | "sha256_mismatch"
  /** It does not fit the disk budget, even after evicting what may be evicted. */
  | "budget"
  /** A file the agent did not place is in the way. */
  | "conflict"
  /** The request was abandoned (its caller went away). */
  | "cancelled"
  /** The local disk refused a read or write. */
  | "io"

export class ModelProvisionFailed extends Error {
  override readonly name = "ModelProvisionFailed"
  /** Worth another attempt (a cut, a timeout, a 5xx, 408 or 429): a download retries these. */
  readonly transient: boolean
  constructor(readonly reason: ModelFailure, message: string, options?: { readonly cause?: unknown; readonly transient?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.transient = options?.transient ?? false
  }
}

/** `e`'s message, with a Node error code when it has one. */
export const describeError = (e: unknown): string => {
  if (!(e instanceof Error)) return String(e)
  const code = (e as { code?: unknown }).code
  return typeof code === "string" && !e.message.includes(code) ? `${e.message} (${code})` : e.message
}

/** A byte count for people: `6.46 GiB (6938893312 bytes)`. */
export const formatBytes = (bytes: number): string => {
  const units = ["KiB", "MiB", "GiB", "TiB"]
  let value = bytes
  let unit = "bytes"
  for (const u of units) {
    if (value < 1024) break
    value /= 1024
    unit = u
  }
  return unit === "bytes" ? `${bytes} bytes` : `${value.toFixed(2)} ${unit} (${bytes} bytes)`
}
