/**
 * The S3 blob store as a layer: an `S3Client` configured by the AWS SDK's standard chain
 * (`AWS_REGION`, `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` or a profile, role or instance
 * credentials, `AWS_ENDPOINT_URL_S3`), path-style addressing when asked, and a check at start
 * that the bucket answers, so a wrong setting stops the server with a message rather than
 * failing the first upload.
 */
import { S3Client, type S3ClientConfig } from "@aws-sdk/client-s3"
import { BlobStore, type StorageError } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { checkBucket } from "./S3Calls.js"
import { makeS3BlobStore, type S3Transfer } from "./S3BlobStore.js"
import type { S3Location } from "./S3Location.js"

export interface S3StoreOptions extends S3Transfer {
  readonly location: S3Location
  /**
   * Path-style addressing, `endpoint/bucket/key` rather than `bucket.endpoint/key`: what MinIO,
   * Ceph and most servers behind a custom endpoint need.
   */
  readonly pathStyle?: boolean
  /** Settings over the SDK's chain (a test's endpoint and credentials); none in production. */
  readonly client?: S3ClientConfig
}

/** Seconds to wait for a connection to S3 before the SDK retries (it waits forever by default). */
const CONNECTION_TIMEOUT_MS = 5_000

export const makeS3Client = (options: Pick<S3StoreOptions, "pathStyle" | "client">): S3Client =>
  new S3Client({
    forcePathStyle: options.pathStyle ?? false,
    requestHandler: { connectionTimeout: CONNECTION_TIMEOUT_MS },
    ...options.client
  })

/** A `BlobStore` in the bucket; fails to build (with a `StorageError` saying why) when the bucket does not answer. */
export const S3BlobStoreLive = (options: S3StoreOptions): Layer.Layer<BlobStore, StorageError> =>
  Layer.effect(
    BlobStore,
    Effect.gen(function*() {
      const client = yield* Effect.acquireRelease(Effect.sync(() => makeS3Client(options)), (client) => Effect.sync(() => client.destroy()))
      yield* checkBucket(client, options.location)
      return makeS3BlobStore(client, options.location, options)
    })
  )
