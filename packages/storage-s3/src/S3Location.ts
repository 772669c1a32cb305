/**
 * Where the S3 blob store keeps blobs: `s3://bucket/prefix` (`WES_BLOB_STORE`). The prefix is
 * optional; blob keys are written under it (`prefix/outputs/<workflow>/...`), so one bucket can
 * hold several deployments' blobs.
 */

export interface S3Location {
  readonly bucket: string
  /** Empty, or path segments ending in `/`. */
  readonly prefix: string
}

/** S3's bucket names: 3-63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit. */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/
const SEGMENT = /^[A-Za-z0-9._-]{1,200}$/

/** The bucket and prefix of an `s3://bucket/prefix` URL, or why it is not one. */
export const parseS3Location = (url: string): { readonly location: S3Location } | { readonly error: string } => {
  const match = /^s3:\/\/([^/?#]*)(\/[^?#]*)?$/.exec(url)
  if (match === null) return { error: `expected s3://bucket/prefix, got ${JSON.stringify(url)}` }
  const bucket = match[1]!
  if (!BUCKET.test(bucket)) return { error: `${JSON.stringify(bucket)} is not an S3 bucket name (3-63 characters: a-z, 0-9, '.', '-')` }
  const segments = (match[2] ?? "").split("/").filter((s) => s !== "")
  const bad = segments.find((s) => !SEGMENT.test(s) || s === "." || s === "..")
  if (bad !== undefined) return { error: `the prefix segment ${JSON.stringify(bad)} may only use A-Z, a-z, 0-9, '.', '_', '-'` }
  return { location: { bucket, prefix: segments.map((s) => `${s}/`).join("") } }
}
