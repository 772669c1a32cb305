/** Storage of user-owned runners. */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { RunnerNotFound, StorageError } from "../domain/Errors.js"
import type { RunnerComfyUI } from "../domain/ComfyUIVersion.js"
import type { LimitReached } from "../domain/LimitReached.js"
import type { PageRequest, Paged } from "../domain/Pagination.js"
import type { Runner, RunnerStatus } from "../domain/Runner.js"
import type { Changes } from "./Changes.js"

export interface RunnerListQuery extends PageRequest {
  readonly status?: RunnerStatus | undefined
}

/** What an edit of a runner may write. */
export type RunnerChanges = Changes<Runner, "name" | "endpoint" | "headers" | "tags" | "status" | "comfyui">

export class RunnerRepository extends Context.Service<RunnerRepository, {
  /** Stores a runner unless the user already has `limit` runners. */
  readonly insert: (runner: Runner, limit?: number) => Effect.Effect<Runner, LimitReached | StorageError>
  readonly findById: (id: string) => Effect.Effect<Option.Option<Runner>, StorageError>
  readonly findForUser: (userId: string, id: string) => Effect.Effect<Option.Option<Runner>, StorageError>
  /** Writes `changes` to the user's runner (Changes.ts) and answers it as stored now. */
  readonly update: (userId: string, id: string, changes: RunnerChanges) => Effect.Effect<Runner, RunnerNotFound | StorageError>
  readonly delete: (userId: string, id: string) => Effect.Effect<boolean, StorageError>
  /**
   * Stores what a probe of the runner's ComfyUI found: an observation, not an edit (`updated_at`
   * stays). False when the runner is gone.
   */
  readonly setComfyUI: (id: string, comfyui: RunnerComfyUI) => Effect.Effect<boolean, StorageError>
  /** The user's runners, newest first. */
  readonly list: (userId: string, query: RunnerListQuery) => Effect.Effect<Paged<Runner>, StorageError>
  readonly count: (userId: string) => Effect.Effect<number, StorageError>
  /** Every active runner of the user (scheduling candidates). */
  readonly listActiveForUser: (userId: string) => Effect.Effect<ReadonlyArray<Runner>, StorageError>
}>()("@wes/core/RunnerRepository") {}
