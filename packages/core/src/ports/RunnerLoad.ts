/**
 * What scheduling reads from the store: the runners a user may use, each with its work in
 * flight, in one read (one statement on PostgreSQL), so choosing a runner for a new workflow
 * costs one round trip however many runners there are.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { RunnerType } from "../domain/Tier.js"
import type { RunnerTarget } from "../domain/Runner.js"
import type { StorageError } from "../domain/Errors.js"

/** A runner a workflow may go to, and how many unfinished workflows it has now. */
export interface RunnerCandidate {
  readonly target: RunnerTarget
  readonly in_flight: number
}

export class RunnerLoad extends Context.Service<RunnerLoad, {
  /** Active runners of `userId`, and active managed runners of `types`, each with its unfinished workflows. */
  readonly candidates: (
    userId: string,
    types: ReadonlyArray<RunnerType>
  ) => Effect.Effect<ReadonlyArray<RunnerCandidate>, StorageError>
}>()("@wes/core/RunnerLoad") {}
