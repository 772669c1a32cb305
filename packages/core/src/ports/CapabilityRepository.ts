/**
 * Storage of runners' capabilities: one record per runner (user-owned or managed), apart from the
 * runner itself, so the writes of a workflow (create, transitions, claims) never touch it. No
 * record means "unknown": never read, or the last read of a new endpoint failed.
 */
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StorageError } from "../domain/Errors.js"
import type { RunnerRef } from "../domain/Workflow.js"
import { StoredCapabilities } from "../domain/Summary.js"

export { StoredCapabilities }

export class CapabilityRepository extends Context.Service<CapabilityRepository, {
  /** Inserts or replaces the runner's record. */
  readonly put: (record: StoredCapabilities) => Effect.Effect<void, StorageError>
  readonly get: (runnerId: string) => Effect.Effect<Option.Option<StoredCapabilities>, StorageError>
  /** Forgets the runner's capabilities (back to unknown). */
  readonly remove: (runnerId: string) => Effect.Effect<void, StorageError>
  /**
   * Active runners (both kinds) whose capabilities were never read or read before `before`,
   * oldest first (never read first), at most `limit`.
   */
  readonly due: (before: DateTime.Utc, limit: number) => Effect.Effect<ReadonlyArray<RunnerRef>, StorageError>
}>()("@wes/core/CapabilityRepository") {}
