/** Storage of users and API tokens (tokens as SHA-256 hashes only). */
import * as Context from "effect/Context"
import type * as DateTime from "effect/DateTime"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { ApiToken, User } from "../domain/Account.js"
import type { StorageError, UserNotFound } from "../domain/Errors.js"
import type { PageRequest, Paged } from "../domain/Pagination.js"
import type { Tier } from "../domain/Tier.js"
import type { Changes } from "./Changes.js"

/** A token and the user it belongs to. */
export interface TokenOwner {
  readonly token: ApiToken
  readonly user: User
}

/** A page of users, optionally of one tier. */
export interface UserQuery extends PageRequest {
  readonly tier?: Tier | undefined
}

/** What an edit of a user may write. */
export type UserChanges = Changes<User, "tier">

export class AccountRepository extends Context.Service<AccountRepository, {
  readonly insertUser: (user: User) => Effect.Effect<User, StorageError>
  readonly findUser: (id: string) => Effect.Effect<Option.Option<User>, StorageError>
  /** Users, newest first (created_at, then id, descending). */
  readonly listUsers: (query: UserQuery) => Effect.Effect<Paged<User>, StorageError>
  /** Writes `changes` to the user (Changes.ts) and answers the user as stored now. */
  readonly updateUser: (id: string, changes: UserChanges) => Effect.Effect<User, UserNotFound | StorageError>
  readonly insertToken: (token: ApiToken) => Effect.Effect<ApiToken, StorageError>
  /** The token with this hash and its user (an indexed lookup). */
  readonly findTokenByHash: (hash: string) => Effect.Effect<Option.Option<TokenOwner>, StorageError>
  readonly findToken: (id: string) => Effect.Effect<Option.Option<ApiToken>, StorageError>
  /** The user's tokens, newest first. */
  readonly listTokens: (userId: string) => Effect.Effect<ReadonlyArray<ApiToken>, StorageError>
  /** Revokes a token; false when there was none. */
  readonly deleteToken: (id: string) => Effect.Effect<boolean, StorageError>
  /** Writes `last_used_at` for a batch of tokens (never moving it backwards). */
  readonly recordTokenUse: (
    uses: ReadonlyArray<{ readonly id: string; readonly at: DateTime.Utc }>
  ) => Effect.Effect<void, StorageError>
}>()("@wes/core/AccountRepository") {}
