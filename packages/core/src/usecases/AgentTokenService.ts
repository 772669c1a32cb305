/**
 * Runner tokens (issue 34, item 2): their owner creates, lists and revokes them
 * (`AgentTokenService`, behind `/v1/runner/{id}/agent-token(s)`), and the agent endpoint checks
 * the one an agent presents (`AgentTokens`, the port, implemented here over the store). Only the
 * owner of an agent runner has its tokens; anyone else's runner is a 404, as everywhere in /v1.
 */
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { User } from "../domain/Account.js"
import { Crypto } from "../domain/Crypto.js"
import { Conflict, RunnerNotFound, type StorageError, TokenNotFound } from "../domain/Errors.js"
import { IdGenerator, isUuid, type RunnerTokenId } from "../domain/Ids.js"
import type { Runner } from "../domain/Runner.js"
import {
  generateRunnerToken,
  type IssuedRunnerToken,
  isWellFormedRunnerToken,
  KEPT_REVOKED_RUNNER_TOKENS,
  MAX_LIVE_RUNNER_TOKENS,
  type RunnerTokenView,
  toRunnerTokenView
} from "../domain/RunnerToken.js"
import { AgentTokens } from "../ports/AgentTokens.js"
import { RunnerRepository } from "../ports/RunnerRepository.js"
import { RunnerTokenRepository } from "../ports/RunnerTokenRepository.js"

/** The 409 for a runner token asked of a direct runner. */
export const notAnAgentRunner = (): Conflict =>
  new Conflict({
    message: "Runner tokens are for agent runners: this runner is direct (WES calls its endpoint). " +
      "Register a runner with \"connection\": \"agent\" to run it behind wes-agent"
  })

/** The 409 for one token more than a runner may have live. */
export const tooManyRunnerTokens = (): Conflict =>
  new Conflict({ message: `Runner already has ${MAX_LIVE_RUNNER_TOKENS} live tokens; revoke one first` })

export class AgentTokenService extends Context.Service<AgentTokenService, {
  /** A new token for the user's agent runner; its value appears only in this result. */
  readonly create: (user: User, runnerId: string) => Effect.Effect<IssuedRunnerToken, RunnerNotFound | Conflict | StorageError>
  /** The runner's tokens, newest first, revoked ones included; never a value. */
  readonly list: (user: User, runnerId: string) => Effect.Effect<ReadonlyArray<RunnerTokenView>, RunnerNotFound | StorageError>
  /** Revokes one of the runner's tokens (again: no change); its agent is disconnected within a lease. */
  readonly revoke: (user: User, runnerId: string, tokenId: string) => Effect.Effect<void, RunnerNotFound | TokenNotFound | StorageError>
}>()("@wes/core/AgentTokenService") {
  static Live: Layer.Layer<AgentTokenService, never, RunnerTokenRepository | RunnerRepository | IdGenerator | Crypto> = Layer.effect(
    AgentTokenService,
    Effect.gen(function*() {
      const tokens = yield* RunnerTokenRepository
      const runners = yield* RunnerRepository
      const ids = yield* IdGenerator
      const crypto = yield* Crypto

      const find = (user: User, id: string): Effect.Effect<Runner, RunnerNotFound | StorageError> =>
        (isUuid(id) ? runners.findForUser(user.id, id) : Effect.succeedNone).pipe(
          Effect.flatMap(Option.match({ onNone: () => Effect.fail(new RunnerNotFound()), onSome: Effect.succeed }))
        )

      return AgentTokenService.of({
        create: (user, runnerId) =>
          Effect.gen(function*() {
            const runner = yield* find(user, runnerId)
            if (runner.connection !== "agent") return yield* Effect.fail(notAnAgentRunner())
            const value = yield* Effect.provideService(generateRunnerToken, Crypto, crypto)
            const token = {
              id: (yield* ids.next) as RunnerTokenId,
              runner_id: runner.id,
              token_hash: yield* crypto.sha256Hex(value),
              created_at: yield* DateTime.now,
              last_used_at: null,
              revoked_at: null
            }
            const outcome = yield* tokens.insert(token, MAX_LIVE_RUNNER_TOKENS)
            if (outcome === "limit_reached") return yield* Effect.fail(tooManyRunnerTokens())
            if (outcome === "runner_gone") return yield* Effect.fail(new RunnerNotFound())
            return { id: token.id, token: value, runner_id: runner.id, created_at: token.created_at }
          }),
        list: (user, runnerId) =>
          Effect.flatMap(find(user, runnerId), (r) => Effect.map(tokens.list(r.id), (ts) => ts.map(toRunnerTokenView))),
        revoke: (user, runnerId, tokenId) =>
          Effect.gen(function*() {
            const runner = yield* find(user, runnerId)
            const revoked = isUuid(tokenId)
              ? yield* tokens.revoke(runner.id, tokenId, yield* DateTime.now, KEPT_REVOKED_RUNNER_TOKENS)
              : Option.none()
            if (Option.isNone(revoked)) return yield* Effect.fail(new TokenNotFound())
          })
      })
    })
  )
}

/**
 * `AgentTokens` over the store. `verify` refuses without a lookup what is not shaped as a runner
 * token, then wants the hash stored, not revoked, and its runner there and still an agent runner;
 * it records the use (`last_used_at`: the agent's last connection).
 */
export const AgentTokensLive: Layer.Layer<AgentTokens, never, RunnerTokenRepository | RunnerRepository | Crypto> = Layer.effect(
  AgentTokens,
  Effect.gen(function*() {
    const tokens = yield* RunnerTokenRepository
    const runners = yield* RunnerRepository
    const crypto = yield* Crypto
    return AgentTokens.of({
      verify: (value) =>
        Effect.gen(function*() {
          if (!isWellFormedRunnerToken(value)) return Option.none()
          const found = yield* tokens.findByHash(yield* crypto.sha256Hex(value))
          if (Option.isNone(found) || found.value.revoked_at !== null) return Option.none()
          const runner = yield* runners.findById(found.value.runner_id)
          if (Option.isNone(runner) || runner.value.connection !== "agent") return Option.none()
          yield* tokens.recordUse(found.value.id, yield* DateTime.now)
          return Option.some({ token_id: found.value.id, runner_id: runner.value.id, user_id: runner.value.user_id })
        }),
      // A deleted runner's tokens are deleted with it: a token still stored and not revoked is live.
      isLive: (tokenId) =>
        isUuid(tokenId)
          ? Effect.map(tokens.findById(tokenId), (t) => Option.isSome(t) && t.value.revoked_at === null)
          : Effect.succeed(false)
    })
  })
)
