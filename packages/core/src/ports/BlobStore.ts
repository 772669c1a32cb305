/**
 * Storage of uploaded inputs and produced outputs, by key. Keys are relative paths of safe
 * segments that the core builds itself (`inputs/<workflow>/<param>/<file>`,
 * `outputs/<workflow>/<output>/<file>`); stores reject anything else, so a file name sent by a
 * client can never address a path outside the store.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type * as Stream from "effect/Stream"
import type { StorageError } from "../domain/Errors.js"

/**
 * What a blob is written from: a stream, or bytes already in memory (a small upload, held whole
 * by the request's reader), which a store writes without running a stream. A stream's run
 * (channel executor, fiber, scope) was over half of a multipart create's runtime steps: 1,336
 * with it, 577 without (docs/decisions.md, "The HTTP edge: one path").
 */
export type BlobContent = Stream.Stream<Uint8Array, StorageError> | ReadonlyArray<Uint8Array>

/** True when `content` is bytes in memory (a blob's content, or a download's). */
export const isBlobBytes = <E>(
  content: Stream.Stream<Uint8Array, E> | ReadonlyArray<Uint8Array>
): content is ReadonlyArray<Uint8Array> => Array.isArray(content)

/** A stored blob. */
export interface Blob {
  /** The WHOLE blob's size in bytes, also when only a range is streamed. */
  readonly size: number
  readonly content_type: string
  /** The blob's bytes, or only those of the range asked for. */
  readonly stream: Stream.Stream<Uint8Array, StorageError>
}

/**
 * Bytes `start` to `end` of a blob, both inclusive (as in HTTP's `Range: bytes=start-end`).
 * The caller clamps it to the blob first: `0 <= start <= end < size`; a store does not check
 * it (the HTTP edge answers 416 for a range it cannot satisfy, knowing the size from a `get`).
 */
export interface BlobRange {
  readonly start: number
  readonly end: number
}

export interface BlobGetOptions {
  readonly range?: BlobRange | undefined
}

/** What `deletePrefix` removed. */
export interface DeletedBlobs {
  readonly blobs: number
  readonly bytes: number
}

/** How a signed URL serves its blob. */
export interface SignedUrlOptions {
  readonly content_type: string
  /** The `Content-Disposition` the URL answers with: the caller's, so a redirected download looks like a streamed one. */
  readonly content_disposition: string
  readonly expires_in_seconds: number
}

export class BlobStore extends Context.Service<BlobStore, {
  /** Writes `content` under `key` (replacing any blob there); the number of bytes written. */
  readonly put: (
    key: string,
    content: BlobContent,
    contentType: string
  ) => Effect.Effect<number, StorageError>
  /** The blob under `key` (none when absent); with `range`, its stream has only those bytes. */
  readonly get: (key: string, options?: BlobGetOptions) => Effect.Effect<Option.Option<Blob>, StorageError>
  /** Copies a blob; false when `from` does not exist. */
  readonly copy: (from: string, to: string) => Effect.Effect<boolean, StorageError>
  /** Removes a blob (no error when absent). */
  readonly delete: (key: string) => Effect.Effect<void, StorageError>
  /**
   * Removes every blob whose key starts with `prefix`, a safe key followed by `/`
   * (`outputs/<workflow>/`); an unsafe prefix is a `StorageError`. What was removed.
   */
  readonly deletePrefix: (prefix: string) => Effect.Effect<DeletedBlobs, StorageError>
  /**
   * A short-lived URL serving the blob directly (an S3 presigned GET), or none for a store
   * that cannot serve one (memory, PostgreSQL, a directory): the caller then streams `get`.
   * It does not check that the blob exists.
   */
  readonly signedUrl: (key: string, options: SignedUrlOptions) => Effect.Effect<Option.Option<string>, StorageError>
}>()("@wes/core/BlobStore") {}

const SEGMENT = /^[A-Za-z0-9._-]{1,200}$/

/** True for a key the stores accept: 1-8 segments of `[A-Za-z0-9._-]`, none `.` or `..`. */
export const isSafeBlobKey = (key: string): boolean => {
  if (key.length === 0 || key.length > 1024) return false
  const segments = key.split("/")
  return segments.length <= 8 && segments.every((s) => SEGMENT.test(s) && s !== "." && s !== "..")
}

/** True for a prefix `deletePrefix` accepts: a safe key followed by `/`. */
export const isSafeBlobPrefix = (prefix: string): boolean =>
  prefix.endsWith("/") && isSafeBlobKey(prefix.slice(0, -1))

/**
 * A file name safe to use as the last segment of a key or of a runner's input path: the
 * base name only, other characters replaced by `_`, no leading dots, at most 120 characters.
 */
export const sanitizeFilename = (name: string): string => {
  const base = name.split(/[\\/]/).pop() ?? ""
  const cleaned = base.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "").slice(-120)
  return cleaned === "" || /^[._-]*$/.test(cleaned) ? "file" : cleaned
}

/** Key of an uploaded input file. */
export const inputBlobKey = (workflowId: string, param: string, filename: string): string =>
  `inputs/${workflowId}/${param}/${sanitizeFilename(filename)}`

/** Key of an output file. */
export const outputBlobKey = (workflowId: string, outputId: string, filename: string): string =>
  `outputs/${workflowId}/${outputId}/${sanitizeFilename(filename)}`
