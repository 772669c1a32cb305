/**
 * The tier's `max_output_bytes`, applied to an output file as it is copied from the runner: its
 * bytes are counted as they pass (a file is never held whole for it), and one byte past the
 * limit stops the copy. The owner's tier is read only for a file that outgrows the smallest
 * limit of the tier table (1 GiB by default): an ordinary output costs no store read for it.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { StorageError } from "../domain/Errors.js"
import { sizeText } from "../domain/SizeText.js"
import { type Tier, TierPolicy } from "../domain/Tier.js"
import { AccountRepository } from "../ports/AccountRepository.js"
import { type BlobContent, isBlobBytes } from "../ports/BlobStore.js"

/** An output file over its owner's tier's `max_output_bytes`: the workflow fails with this message, and it is not retried. */
export class OutputTooLarge extends Data.TaggedError("OutputTooLarge")<{ readonly message: string }> {}

/** The limit of one workflow's outputs: bytes, and the tier whose limit it is. */
interface Limit {
  readonly bytes: number
  readonly tier: Tier | undefined
}

/** Describes the file in a message: `ComfyUI_00001_.png (node 9)`. */
export interface LimitedFile {
  readonly filename: string
  readonly node_id: string
}

/**
 * The limit for a workflow of `userId`, read at most once (and only when a file needs it); until
 * then, the smallest limit of the tier table, below which no tier's limit can be passed.
 */
export const outputLimits = (userId: string) =>
  Effect.gen(function*() {
    const policy = yield* TierPolicy
    const accounts = yield* AccountRepository
    const floor = Math.min(...Object.values(policy.table).map((t) => t.max_output_bytes))
    const owner = yield* Effect.cached(Effect.map(accounts.findUser(userId), (user): Limit =>
      // An owner deleted meanwhile keeps the smallest limit.
      Option.match(user, { onNone: () => ({ bytes: floor, tier: undefined }), onSome: (u) => ({ bytes: policy.limitsFor(u.tier).max_output_bytes, tier: u.tier }) })))
    return { floor, owner }
  })

export type OutputLimits = Effect.Success<ReturnType<typeof outputLimits>>

const tooLarge = (file: LimitedFile, limit: Limit) =>
  new OutputTooLarge({
    message: `The output file ${file.filename} (node ${file.node_id}) is larger than ${sizeText(limit.bytes)}, ` +
      (limit.tier === undefined ? "the output limit (max_output_bytes)" : `the ${limit.tier} tier's output limit (max_output_bytes)`)
  })

/**
 * `content` counted against the limit: bytes in memory are checked at once, a stream as it
 * passes. A stream over the limit fails (a `StorageError`, which ends the store's write) and
 * `overflow` then tells why; a store failure leaves it empty.
 */
export const limitContent = (limits: OutputLimits, file: LimitedFile, content: BlobContent) =>
  Effect.gen(function*() {
    let overflow: OutputTooLarge | undefined
    const check = (size: number): Effect.Effect<void, OutputTooLarge | StorageError> =>
      size <= limits.floor
        ? Effect.void
        : Effect.flatMap(limits.owner, (limit) => (size <= limit.bytes ? Effect.void : Effect.fail(tooLarge(file, limit))))
    const overflown = () => Option.fromNullishOr(overflow)
    if (isBlobBytes(content)) {
      yield* check(content.reduce((n, c) => n + c.length, 0))
      return { content, overflown }
    }
    let size = 0
    const counted = content.pipe(Stream.mapArrayEffect((chunks) => {
      for (const c of chunks) size += c.length
      return Effect.as(
        Effect.catchTag(check(size), "OutputTooLarge", (e) => {
          overflow = e
          return Effect.fail(new StorageError({ message: e.message }))
        }),
        chunks
      )
    }))
    return { content: counted satisfies BlobContent, overflown }
  })
