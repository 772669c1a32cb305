/**
 * `deletePrefix` of the S3 store: lists the keys under the prefix a page (at most 1,000) at a
 * time and deletes each page with one `DeleteObjects`, until none is left; what was deleted is
 * counted from the listing. An error for any key fails the call (the rest of the page may be gone).
 */
import { DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from "@aws-sdk/client-s3"
import { type DeletedBlobs, StorageError } from "@wes/core"
import * as Effect from "effect/Effect"
import { call } from "./S3Calls.js"

export const deleteUnder = (client: S3Client, Bucket: string, Prefix: string): Effect.Effect<DeletedBlobs, StorageError> =>
  Effect.gen(function*() {
    let blobs = 0
    let bytes = 0
    let token: string | undefined
    do {
      const page = yield* call("list", (signal) => client.send(new ListObjectsV2Command({ Bucket, Prefix, ContinuationToken: token }), { abortSignal: signal }))
      const objects = page.Contents ?? []
      if (objects.length > 0) {
        const deleted = yield* call("delete", (signal) =>
          client.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: objects.map(({ Key }) => ({ Key })), Quiet: true } }), { abortSignal: signal }))
        const failed = deleted.Errors ?? []
        if (failed.length > 0) {
          return yield* Effect.fail(new StorageError({ message: `S3 store: could not delete ${failed.length} objects under ${Prefix}: ${failed[0]!.Code ?? ""} ${failed[0]!.Message ?? ""}` }))
        }
        blobs += objects.length
        bytes += objects.reduce((n, o) => n + (o.Size ?? 0), 0)
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined
    } while (token !== undefined)
    return { blobs, bytes }
  })
