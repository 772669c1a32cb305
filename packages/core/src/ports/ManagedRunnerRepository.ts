/** Storage of operator-managed runners. */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { ManagedRunnerNotFound, StorageError } from "../domain/Errors.js"
import type { RunnerComfyUI } from "../domain/ComfyUIVersion.js"
import type { PageRequest, Paged } from "../domain/Pagination.js"
import type { ManagedRunner, RunnerStatus } from "../domain/Runner.js"
import type { RunnerType } from "../domain/Tier.js"
import type { Changes } from "./Changes.js"

export interface ManagedRunnerQuery extends PageRequest {
  /** Only runners of these types (a tier's allowed types); absent: all. */
  readonly types?: ReadonlyArray<RunnerType> | undefined
  readonly status?: RunnerStatus | undefined
}

/** What an edit of a managed runner may write. */
export type ManagedRunnerChanges = Changes<ManagedRunner, "name" | "runner_type" | "status" | "endpoint" | "headers" | "tags" | "comfyui">

export class ManagedRunnerRepository extends Context.Service<
  ManagedRunnerRepository,
  {
    readonly insert: (runner: ManagedRunner) => Effect.Effect<ManagedRunner, StorageError>
    readonly findById: (id: string) => Effect.Effect<Option.Option<ManagedRunner>, StorageError>
    /** Writes `changes` to the runner (Changes.ts) and answers it as stored now. */
    readonly update: (id: string, changes: ManagedRunnerChanges) => Effect.Effect<ManagedRunner, ManagedRunnerNotFound | StorageError>
    readonly delete: (id: string) => Effect.Effect<boolean, StorageError>
    /**
     * Stores what a probe of the runner's ComfyUI found: an observation, not an edit (`updated_at`
     * stays). False when the runner is gone.
     */
    readonly setComfyUI: (id: string, comfyui: RunnerComfyUI) => Effect.Effect<boolean, StorageError>
    /** Managed runners, newest first. */
    readonly list: (query: ManagedRunnerQuery) => Effect.Effect<Paged<ManagedRunner>, StorageError>
    /** Every active managed runner of the given types (scheduling candidates). */
    readonly listActive: (types: ReadonlyArray<RunnerType>) => Effect.Effect<ReadonlyArray<ManagedRunner>, StorageError>
  }
>()("@wes/core/ManagedRunnerRepository") {}
