/**
 * Storage of runner tokens (issue 34, item 2): SHA-256 hashes only, each token scoped to one user
 * runner and gone with it (a deleted runner's tokens are deleted too). Revoked tokens stay listed
 * (with `revoked_at`) until a runner has more than `keepRevoked` of them.
 */
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StorageError } from "../domain/Errors.js"
import type { RunnerToken } from "../domain/RunnerToken.js"

/** What an insert did: stored, refused at the bound of live tokens, or refused for a runner that is gone. */
export type RunnerTokenInsert = "inserted" | "limit_reached" | "runner_gone"

export class RunnerTokenRepository extends Context.Service<RunnerTokenRepository, {
  /**
   * Stores a token unless its runner is gone or already has `liveLimit` live (not revoked)
   * tokens; the count and the insert are atomic, so concurrent inserts cannot overshoot.
   */
  readonly insert: (token: RunnerToken, liveLimit: number) => Effect.Effect<RunnerTokenInsert, StorageError>
  /** The token with this hash, revoked or not (an indexed lookup). */
  readonly findByHash: (hash: string) => Effect.Effect<Option.Option<RunnerToken>, StorageError>
  readonly findById: (id: string) => Effect.Effect<Option.Option<RunnerToken>, StorageError>
  /** The runner's tokens, newest first. */
  readonly list: (runnerId: string) => Effect.Effect<ReadonlyArray<RunnerToken>, StorageError>
  /**
   * Revokes the runner's token at `at` (a token revoked already keeps its first `revoked_at`) and
   * deletes the runner's revoked tokens beyond the `keepRevoked` most recently revoked. The token
   * as stored now; none when the runner has no such token.
   */
  readonly revoke: (
    runnerId: string,
    id: string,
    at: DateTime.Utc,
    keepRevoked: number
  ) => Effect.Effect<Option.Option<RunnerToken>, StorageError>
  /** Writes `last_used_at` (never moving it backwards). */
  readonly recordUse: (id: string, at: DateTime.Utc) => Effect.Effect<void, StorageError>
}>()("@wes/core/RunnerTokenRepository") {}
