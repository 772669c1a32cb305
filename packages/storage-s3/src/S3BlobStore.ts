/**
 * Blobs as objects of an S3-compatible bucket (AWS S3, MinIO, Cloudflare R2, Ceph), under the
 * location's prefix: `<prefix><key>`. Every instance of WES sees every blob.
 *
 * A put streams its content through `@aws-sdk/lib-storage`'s `Upload`: one `PutObject` for a
 * blob that fits one part, else a multipart upload of `partSize` parts, at most `queueSize` of
 * them in flight, so a put holds about (queueSize + 1) x partSize bytes whatever the blob's size
 * (8 MiB x 2 by default). A failed or interrupted upload is aborted (no parts left behind).
 *
 * A get asks `HeadObject` for the size and type; its stream sends the `GetObject` only when it
 * runs (an answer that never reads the bytes, a 304, holds no connection), with `If-Match` on
 * the ETag seen, so a blob replaced meanwhile fails the read rather than mixing two versions.
 */
import { CopyObjectCommand, DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, type S3Client } from "@aws-sdk/client-s3"
import { Upload } from "@aws-sdk/lib-storage"
import { getSignedUrl } from "@aws-sdk/s3-request-presigner"
import { type Blob, BlobStore, isBlobBytes, isSafeBlobKey, isSafeBlobPrefix, StorageError } from "@wes/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { call, isMissing, s3Error } from "./S3Calls.js"
import { deleteUnder } from "./S3Prefix.js"
import type { S3Location } from "./S3Location.js"

export interface S3Transfer {
  /** Bytes of a multipart upload's part (8 MiB; S3's minimum is 5 MiB). */
  readonly partSize?: number
  /** Parts uploaded at the same time (2). */
  readonly queueSize?: number
}

const invalidKey = (key: string) => new StorageError({ message: `S3 store: invalid blob key ${JSON.stringify(key)}` })

export const makeS3BlobStore = (client: S3Client, location: S3Location, transfer: S3Transfer = {}) => {
  const Bucket = location.bucket
  const objectKey = (key: string) => `${location.prefix}${key}`
  const partSize = transfer.partSize ?? 8 * 1024 * 1024
  const queueSize = transfer.queueSize ?? 2

  /** The object's bytes (or a range of them) as the version `etag` names. */
  const download = (key: string, etag: string | undefined, range: { readonly start: number; readonly end: number } | undefined) =>
    Stream.unwrap(Effect.map(
      call("read", (signal) =>
        client.send(new GetObjectCommand({
          Bucket,
          Key: objectKey(key),
          IfMatch: etag,
          Range: range === undefined ? undefined : `bytes=${range.start}-${range.end}`
        }), { abortSignal: signal })),
      ({ Body }) =>
        Body === undefined ? Stream.empty : Stream.fromAsyncIterable(Body as AsyncIterable<Uint8Array>, s3Error("read"))
    ))

  return BlobStore.of({
    put: (key, content, contentType) => {
      if (!isSafeBlobKey(key)) return Effect.fail(invalidKey(key))
      return Effect.suspend(() => {
        let size = 0
        const counted = (chunk: Uint8Array) => {
          size += chunk.length
          return chunk
        }
        return call("write", (signal) => {
          // The content's reader stops after the upload is aborted: a body that just ended would be completed.
          const reading = new AbortController()
          const Body = isBlobBytes(content)
            ? Buffer.concat(content.map(counted))
            : Stream.toReadableStreamWith(Stream.map(content, counted), Context.empty(), { signal: reading.signal })
          const upload = new Upload({ client, params: { Bucket, Key: objectKey(key), Body, ContentType: contentType }, partSize, queueSize })
          signal.addEventListener("abort", () => {
            void upload.abort()
            reading.abort()
          }, { once: true })
          return upload.done().finally(() => reading.abort())
        }).pipe(Effect.map(() => size))
      })
    },
    get: (key, options) =>
      isSafeBlobKey(key)
        ? call("read", (signal) => client.send(new HeadObjectCommand({ Bucket, Key: objectKey(key) }), { abortSignal: signal })).pipe(
          Effect.map((head): Option.Option<Blob> =>
            Option.some({
              size: head.ContentLength ?? 0,
              content_type: head.ContentType ?? "application/octet-stream",
              stream: download(key, head.ETag, options?.range)
            })
          ),
          Effect.catchIf((e) => isMissing(e.cause), () => Effect.succeedNone)
        )
        : Effect.succeedNone,
    copy: (from, to) => {
      if (!isSafeBlobKey(to)) return Effect.fail(invalidKey(to))
      if (!isSafeBlobKey(from)) return Effect.succeed(false)
      return call("copy", (signal) =>
        client.send(new CopyObjectCommand({ Bucket, Key: objectKey(to), CopySource: `${Bucket}/${objectKey(from)}` }), { abortSignal: signal })).pipe(
        Effect.as(true),
        Effect.catchIf((e) => isMissing(e.cause), () => Effect.succeed(false))
      )
    },
    delete: (key) =>
      isSafeBlobKey(key)
        ? call("delete", (signal) => client.send(new DeleteObjectCommand({ Bucket, Key: objectKey(key) }), { abortSignal: signal })).pipe(Effect.asVoid)
        : Effect.void,
    deletePrefix: (prefix) => (isSafeBlobPrefix(prefix) ? deleteUnder(client, Bucket, objectKey(prefix)) : Effect.fail(invalidKey(prefix))),
    signedUrl: (key, { content_disposition, content_type, expires_in_seconds }) =>
      isSafeBlobKey(key)
        ? call("sign a URL", () =>
          getSignedUrl(client, new GetObjectCommand({
            Bucket,
            Key: objectKey(key),
            ResponseContentType: content_type,
            ResponseContentDisposition: content_disposition
          }), { expiresIn: expires_in_seconds })).pipe(Effect.map(Option.some))
        : Effect.fail(invalidKey(key))
  })
}
