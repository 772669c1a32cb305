/**
 * Runner tokens (issue 34, item 2): what the agent endpoint needs to know about the bearer token
 * an agent presents. Each token is scoped to one user runner, created by its owner
 * (`POST /v1/runner/{id}/agent-token`, shown once), stored hashed like API tokens, revocable.
 * Implemented over the store by `AgentTokenService` (usecases) on `RunnerTokenRepository`.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Option from "effect/Option"
import type { StorageError } from "../domain/Errors.js"

/** Who a live runner token speaks for. */
export interface AgentIdentity {
  readonly token_id: string
  readonly runner_id: string
  readonly user_id: string
}

export class AgentTokens extends Context.Service<AgentTokens, {
  /** The runner a presented token is for; none for a wrong, revoked token or a runner gone/not agent. */
  readonly verify: (token: string) => Effect.Effect<Option.Option<AgentIdentity>, StorageError>
  /** Whether the token is still live (not revoked, its runner still there): asked again within every lease. */
  readonly isLive: (tokenId: string) => Effect.Effect<boolean, StorageError>
}>()("@wes/core/AgentTokens") {}
