/** The edit of a runner of either kind: what a request changes, and the probe of a runner that moved. */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import type { RunnerComfyUI } from "../domain/ComfyUIVersion.js"
import type { RunnerProbeFailed, ValidationError } from "../domain/Errors.js"
import { type RunnerHeaders, unmaskHeaders } from "../domain/Runner.js"
import { normalizeTags } from "../domain/Tags.js"
import { type Changes, changesOf } from "../ports/Changes.js"

/** The fields of both runner kinds an edit reads. */
interface Editable {
  readonly endpoint: string
  readonly headers: RunnerHeaders
  readonly tags: ReadonlyArray<string>
  readonly comfyui: RunnerComfyUI | null
  readonly updated_at: DateTime.Utc
}

/** A decoded edit request: fields of the runner, tags as sent, header values maybe masked. */
type EditRequest<R extends Editable, K extends keyof R> =
  & { readonly [P in K]?: R[P] }
  & { readonly tags?: ReadonlyArray<string>; readonly headers?: RunnerHeaders }

export interface RunnerEdit<R extends Editable, K extends keyof R> {
  readonly changes: Changes<R, K> & { readonly comfyui?: RunnerComfyUI | null }
  /** Another endpoint or other headers: maybe another ComfyUI, probed again. */
  readonly moved: boolean
}

/**
 * The changes `req` makes to the runner `find` reads: its fields that differ, tags normalized
 * (checked before the read), masked header values as stored. The masked values are why the
 * runner is read first: a header written between the read and the write is overwritten, as any
 * field two edits both send. A runner that moved may be another ComfyUI: `probe` checks it, and
 * what was known of the old one goes.
 */
export const editRunner = <R extends Editable, K extends keyof R, E>(
  req: EditRequest<R, K>,
  find: Effect.Effect<R, E>,
  probe: (moved: R) => Effect.Effect<RunnerComfyUI | null, RunnerProbeFailed>
): Effect.Effect<RunnerEdit<R, K>, E | ValidationError | RunnerProbeFailed> =>
  Effect.gen(function*() {
    const tags = req.tags === undefined ? {} : { tags: yield* Effect.fromResult(normalizeTags(req.tags)) }
    const current = yield* find
    const headers = req.headers === undefined ? {} : { headers: unmaskHeaders(req.headers, current.headers) }
    const changes = changesOf<R, K>(current, { ...req, ...tags, ...headers }, yield* DateTime.now)
    const moved = "endpoint" in changes || "headers" in changes
    if (!moved) return { changes, moved }
    const comfyui = yield* probe({ ...current, ...changes, comfyui: null })
    return { changes: { ...changes, comfyui }, moved }
  })
