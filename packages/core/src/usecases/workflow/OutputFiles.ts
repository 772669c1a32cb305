/**
 * A workflow's output files as a download reads them: found by id without reading the store (a
 * conditional request answers from the row), then read whole or a byte range, or served by the
 * store itself through a short-lived URL; and all of a workflow's outputs, for one archive.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { User } from "../../domain/Account.js"
import { type OutputExpired, OutputNotFound, type StorageError, WorkflowNotFound } from "../../domain/Errors.js"
import { isUuid } from "../../domain/Ids.js"
import { outputExpired } from "../../domain/Retention.js"
import type { WorkflowHead, WorkflowOutput } from "../../domain/Workflow.js"
import { type Blob, type BlobRange, BlobStore, type SignedUrlOptions } from "../../ports/BlobStore.js"
import { WorkflowRepository } from "../../ports/WorkflowRepository.js"

/** An output file of the caller's workflow: its row, and how to read it. */
export interface StoredOutput {
  readonly output: WorkflowOutput
  /** Its bytes, or only those of `range` (clamped by the caller to `output.size`); not found when the store lost it. */
  readonly read: (range?: BlobRange) => Effect.Effect<Blob, OutputNotFound | StorageError>
  /** A URL of the store serving it with its content type and `content_disposition`; none when the store serves none. */
  readonly signedUrl: (options: Omit<SignedUrlOptions, "content_type">) => Effect.Effect<Option.Option<string>, StorageError>
}

/** A workflow and its output files, in the order they were stored. */
export interface OutputArchive {
  readonly workflow: WorkflowHead
  readonly outputs: ReadonlyArray<StoredOutput>
}

export const makeOutputFiles = Effect.gen(function*() {
  const repo = yield* WorkflowRepository
  const blobs = yield* BlobStore

  const stored = (output: WorkflowOutput): StoredOutput => ({
    output,
    read: (range) =>
      Effect.flatMap(
        blobs.get(output.blob_key, range === undefined ? undefined : { range }),
        Option.match({ onNone: () => Effect.fail(new OutputNotFound()), onSome: Effect.succeed })
      ),
    signedUrl: (options) => blobs.signedUrl(output.blob_key, { ...options, content_type: output.content_type })
  })

  const allOutputs = (user: User, id: string): Effect.Effect<OutputArchive, WorkflowNotFound | StorageError> =>
    (isUuid(id) ? repo.findHeadForUser(user.id, id) : Effect.succeedNone).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.fail(new WorkflowNotFound()), onSome: Effect.succeed })),
      Effect.flatMap((workflow) => Effect.map(repo.listOutputs(workflow.id), (rows) => ({ workflow, outputs: rows.map(stored) })))
    )

  /** The outputs still kept; 410 when there were outputs and every one expired (retention). */
  const outputArchive = (user: User, id: string): Effect.Effect<OutputArchive, WorkflowNotFound | OutputExpired | StorageError> =>
    Effect.flatMap(allOutputs(user, id), ({ outputs, workflow }) => {
      const kept = outputs.filter((o) => o.output.expired_at === null)
      const expired = kept.length === 0 && outputs.length > 0 ? outputExpired(workflow, outputs[0]!.output) : undefined
      return expired === undefined ? Effect.succeed({ workflow, outputs: kept }) : Effect.fail(expired)
    })

  const findOutput = (user: User, id: string, outputId: string) =>
    Effect.flatMap(allOutputs(user, id), ({ outputs, workflow }): Effect.Effect<StoredOutput, OutputNotFound | OutputExpired> => {
      // An expired output answers 410 here, for every download path (domain/Retention.ts).
      const found = outputs.find((o) => o.output.id === outputId)
      if (found === undefined) return Effect.fail(new OutputNotFound())
      const expired = outputExpired(workflow, found.output)
      return expired === undefined ? Effect.succeed(found) : Effect.fail(expired)
    })

  const openOutput = (user: User, id: string, outputId: string) =>
    Effect.flatMap(findOutput(user, id, outputId), (o) => Effect.map(o.read(), (blob) => ({ output: o.output, blob })))

  return { findOutput, outputArchive, openOutput }
})
