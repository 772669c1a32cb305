/**
 * Calls of the AWS SDK as effects: interruptible (the SDK's `abortSignal`), failing with a
 * `StorageError` that names what was done and what S3 answered.
 */
import { HeadBucketCommand, type S3Client } from "@aws-sdk/client-s3"
import { StorageError } from "@wes/core"
import * as Effect from "effect/Effect"
import type { S3Location } from "./S3Location.js"

/** The HTTP status S3 answered with, if it answered. */
export const statusOf = (e: unknown): number | undefined => {
  if (typeof e !== "object" || e === null || !("$metadata" in e)) return undefined
  const metadata = e.$metadata
  return typeof metadata === "object" && metadata !== null && "httpStatusCode" in metadata && typeof metadata.httpStatusCode === "number"
    ? metadata.httpStatusCode
    : undefined
}

/** S3 answered that the key (or bucket) does not exist. */
export const isMissing = (e: unknown): boolean =>
  statusOf(e) === 404 || (e instanceof Error && (e.name === "NoSuchKey" || e.name === "NotFound"))

const describe = (e: unknown): string => {
  if (!(e instanceof Error)) return String(e)
  const status = statusOf(e)
  return `${e.name}${status === undefined ? "" : ` (HTTP ${status})`}: ${e.message}`
}

export const s3Error = (what: string) => (e: unknown): StorageError =>
  e instanceof StorageError ? e : new StorageError({ message: `S3 store: could not ${what}: ${describe(e)}`, cause: e })

/** `f` as an effect whose interruption aborts the request. */
export const call = <A>(what: string, f: (signal: AbortSignal) => Promise<A>): Effect.Effect<A, StorageError> =>
  Effect.tryPromise({ try: (signal) => f(signal), catch: s3Error(what) })

/** Why a bucket cannot be used, in words an operator acts on. */
const bucketProblem = (e: unknown, bucket: string): string => {
  const status = statusOf(e)
  if (status === 404) return `the bucket "${bucket}" does not exist`
  if (status === 403) return `access to the bucket "${bucket}" is denied: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or the role) and the bucket's policy`
  if (status === 301) return `the bucket "${bucket}" is in another region than AWS_REGION`
  if (status === undefined) return `S3 cannot be reached (check AWS_ENDPOINT_URL_S3 and AWS_REGION): ${describe(e)}`
  return describe(e)
}

/** Fails with a `StorageError` saying why unless the bucket answers (`HeadBucket`) within `timeout`. */
export const checkBucket = (client: S3Client, location: S3Location, timeout = "30 seconds" as const) =>
  Effect.tryPromise({
    try: (signal) => client.send(new HeadBucketCommand({ Bucket: location.bucket }), { abortSignal: signal }),
    catch: (e) => new StorageError({ message: `S3 store (WES_BLOB_STORE=s3://${location.bucket}/${location.prefix}): ${bucketProblem(e, location.bucket)}`, cause: e })
  }).pipe(
    Effect.timeoutOrElse({
      duration: timeout,
      orElse: () => Effect.fail(new StorageError({ message: `S3 store: the bucket "${location.bucket}" did not answer within ${timeout} (check AWS_ENDPOINT_URL_S3)` }))
    }),
    Effect.asVoid
  )
