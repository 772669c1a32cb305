/**
 * Storage of runners' capabilities: one record per runner (user-owned or managed), apart from the
 * runner itself, so the writes of a workflow (create, transitions, claims) never touch it. No
 * record means "unknown": never read, or the last read of a new endpoint failed.
 */
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { StorageError } from "../shared/Errors.js"
import { Timestamp } from "../shared/Json.js"
import type { RunnerRef } from "../workflows/Workflow.js"
import { CapabilitySummary } from "./Summary.js"

/** A runner's capabilities as stored. */
export const StoredCapabilities = Schema.Struct({
  runner_id: Schema.String,
  runner_kind: Schema.Literals(["user", "managed"]),
  summary: CapabilitySummary,
  /** SHA-256 of the summary's JSON. */
  hash: Schema.String,
  read_at: Timestamp
}).annotate({ identifier: "StoredCapabilities" })
export interface StoredCapabilities extends Schema.Schema.Type<typeof StoredCapabilities> {}

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
