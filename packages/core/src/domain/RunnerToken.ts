/**
 * Runner tokens (issue 34, item 2): the bearer token a `wes-agent` presents when it dials out to
 * WES. Each is scoped to one agent runner, created by its owner, shown once, stored as its SHA-256
 * only (as API tokens, Token.ts) and revocable. Its form is an API token's with another prefix,
 * `wes_rt_`: a leaked one is recognisable, and it never passes for an API token (the `_` after
 * `rt` is outside an API token's alphabet), so it cannot call /v1.
 */
import * as Schema from "effect/Schema"
import { RunnerId, RunnerTokenId } from "./Ids.js"
import { Timestamp } from "./Json.js"
import { generateTokenOf, isWellFormedTokenOf } from "./Token.js"

/** Every runner token starts with this (`@wes/runner-client`'s AgentProtocol re-exports it). */
export const RUNNER_TOKEN_PREFIX = "wes_rt_"

/** A runner has at most this many live (not revoked) tokens: enough to rotate, not a leak's worth. */
export const MAX_LIVE_RUNNER_TOKENS = 10

/** Revoked tokens a runner keeps listed (newest revocations); older ones are deleted. */
export const KEPT_REVOKED_RUNNER_TOKENS = 20

/** True when `token` has the prefix, length, alphabet and checksum of a runner token. */
export const isWellFormedRunnerToken = (token: string): boolean => isWellFormedTokenOf(RUNNER_TOKEN_PREFIX, token)

/** A new runner token value (shown once, never stored). */
export const generateRunnerToken = generateTokenOf(RUNNER_TOKEN_PREFIX)

/** A stored runner token: only its SHA-256 hash is kept. */
export const RunnerToken = Schema.Struct({
  id: RunnerTokenId,
  runner_id: RunnerId,
  token_hash: Schema.String,
  created_at: Timestamp,
  last_used_at: Schema.NullOr(Timestamp),
  revoked_at: Schema.NullOr(Timestamp)
}).annotate({ identifier: "RunnerTokenRecord" })
export interface RunnerToken extends Schema.Schema.Type<typeof RunnerToken> {}

/** A runner token as listed: never its value or hash. */
export const RunnerTokenView = Schema.Struct({
  id: RunnerTokenId,
  created_at: Timestamp,
  last_used_at: Schema.NullOr(Timestamp).annotate({ description: "When an agent last connected with it, or null" }),
  revoked_at: Schema.NullOr(Timestamp).annotate({ description: "When it was revoked, or null while it is live" })
}).annotate({ identifier: "RunnerToken", description: "A runner token as listed: never its value" })
export interface RunnerTokenView extends Schema.Schema.Type<typeof RunnerTokenView> {}

export const toRunnerTokenView = (t: RunnerToken): RunnerTokenView => ({
  id: t.id,
  created_at: t.created_at,
  last_used_at: t.last_used_at,
  revoked_at: t.revoked_at
})

/** A newly created runner token: the only time its value is shown. */
export const IssuedRunnerToken = Schema.Struct({
  id: RunnerTokenId,
  token: Schema.String.annotate({
    description: "The token (`wes_rt_...`), shown this once: give it to `wes-agent` as WES_RUNNER_TOKEN"
  }),
  runner_id: RunnerId,
  created_at: Timestamp
}).annotate({ identifier: "IssuedRunnerToken" })
export interface IssuedRunnerToken extends Schema.Schema.Type<typeof IssuedRunnerToken> {}
