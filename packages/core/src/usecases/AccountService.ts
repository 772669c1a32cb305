/**
 * Accounts: authenticating bearer tokens (the contract's three 401s), the current user's limits
 * and usage, and the operator's user and token management (the only way tokens come to exist).
 */
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import {
  type ApiToken,
  type ApiTokenView,
  CreateUserRequest,
  type CurrentUser,
  IssueTokenRequest,
  type IssuedToken,
  toApiTokenView,
  type User,
  type UserDetail
} from "../domain/Account.js"
import { AccountRepository } from "../ports/AccountRepository.js"
import { changesOf } from "../ports/Changes.js"
import { Crypto } from "../domain/Crypto.js"
import {
  InvalidToken,
  MissingAuthorization,
  type StorageError,
  TokenExpired,
  TokenNotFound,
  UserNotFound,
  ValidationError
} from "../domain/Errors.js"
import { IdGenerator, isUuid, type TokenId, type UserId } from "../domain/Ids.js"
import { RunnerRepository } from "../ports/RunnerRepository.js"
import { TemplateRepository } from "../ports/TemplateRepository.js"
import { Tier, TierPolicy } from "../domain/Tier.js"
import { generateToken, isExpired, isWellFormedToken } from "../domain/Token.js"
import { decodeRequest } from "../domain/Validation.js"
import { pageOf, type PageInput, type Paged } from "../domain/Pagination.js"
import { WorkflowRepository } from "../ports/WorkflowRepository.js"

/** The authenticated caller. */
export interface Principal {
  readonly user: User
  readonly token_id: string
}

export type AuthenticationError = MissingAuthorization | InvalidToken | TokenExpired

/** How token use is written back. */
export interface TokenUseOptions {
  /** `last_used_at` is written at most this often per token. */
  readonly minInterval: Duration.Input
  /** Pending writes are flushed in one batch this often. */
  readonly flushInterval: Duration.Input
}

export const defaultTokenUseOptions: TokenUseOptions = {
  minInterval: Duration.minutes(1),
  flushInterval: Duration.seconds(10)
}

const BEARER = /^Bearer[ ]+(\S+)[ ]*$/i

/** The token of an `Authorization: Bearer <token>` header (undefined when it has another form). */
export const bearerToken = (header: string): string | undefined => BEARER.exec(header)?.[1]

export const UpdateUserRequest = Schema.Struct({ tier: Tier }).annotate({ identifier: "UpdateUserRequest" })

export class AccountService extends Context.Service<AccountService, {
  /** Checks an Authorization header; malformed tokens are rejected without a storage lookup. */
  readonly authenticate: (authorization: string | undefined) => Effect.Effect<Principal, AuthenticationError | StorageError>
  /** `GET /v1/user`: tier, limits and current usage. */
  readonly currentUser: (user: User) => Effect.Effect<CurrentUser, StorageError>
  readonly createUser: (input: unknown) => Effect.Effect<User, ValidationError | StorageError>
  readonly getUser: (id: string) => Effect.Effect<User, UserNotFound | StorageError>
  /** The operator's view of a user: limits and current usage. */
  readonly userDetail: (id: string) => Effect.Effect<UserDetail, UserNotFound | StorageError>
  /** The operator's list of users, newest first, optionally of one tier. */
  readonly listUsers: (input: PageInput & { readonly tier?: Tier | undefined }) => Effect.Effect<Paged<User>, ValidationError | StorageError>
  readonly updateUser: (id: string, input: unknown) => Effect.Effect<User, ValidationError | UserNotFound | StorageError>
  /** Issues a token; its value appears only in this result. */
  readonly issueToken: (userId: string, input: unknown) => Effect.Effect<IssuedToken, ValidationError | UserNotFound | StorageError>
  readonly listTokens: (userId: string) => Effect.Effect<ReadonlyArray<ApiTokenView>, UserNotFound | StorageError>
  readonly revokeToken: (id: string) => Effect.Effect<void, TokenNotFound | StorageError>
  /** Writes pending `last_used_at` updates now (also done on a timer and at shutdown). */
  readonly flushTokenUse: Effect.Effect<void, StorageError>
}>()("@wes/core/AccountService") {
  /** Needs a scope: a fiber writes token use in batches until the scope closes (then flushes). */
  static layer = (
    options: TokenUseOptions = defaultTokenUseOptions
  ): Layer.Layer<
    AccountService,
    never,
    AccountRepository | WorkflowRepository | TemplateRepository | RunnerRepository | TierPolicy | IdGenerator | Crypto
  > => Layer.effect(AccountService, make(options))

  static Live = AccountService.layer()
}

function make(options: TokenUseOptions) {
  return Effect.gen(function*() {
    const accounts = yield* AccountRepository
    const workflows = yield* WorkflowRepository
    const templates = yield* TemplateRepository
    const runners = yield* RunnerRepository
    const policy = yield* TierPolicy
    const ids = yield* IdGenerator
    const crypto = yield* Crypto
    const minInterval = Duration.toMillis(options.minInterval)
    const decodeUser = decodeRequest(CreateUserRequest)
    const decodeUpdate = decodeRequest(UpdateUserRequest)
    const decodeToken = decodeRequest(IssueTokenRequest)

    // Token id -> time of the last use we decided to write; pending: not yet written.
    const recorded = new Map<string, number>()
    let pending = new Map<string, DateTime.Utc>()

    const noteUse = (token: ApiToken, now: DateTime.Utc) => {
      const at = DateTime.toEpochMillis(now)
      const last = recorded.get(token.id) ?? (token.last_used_at === null ? -Infinity : DateTime.toEpochMillis(token.last_used_at))
      if (at - last >= minInterval) {
        recorded.set(token.id, at)
        pending.set(token.id, now)
      }
    }

    const flushTokenUse = Effect.suspend(() => {
      if (pending.size === 0) return Effect.void
      const batch = pending
      pending = new Map()
      return accounts.recordTokenUse(Array.from(batch, ([id, at]) => ({ id, at }))).pipe(
        Effect.tapError(() =>
          Effect.sync(() => {
            // Keep what failed for the next flush unless a newer use replaced it.
            for (const [id, at] of batch) if (!pending.has(id)) pending.set(id, at)
          })
        ),
        Effect.andThen(Effect.flatMap(DateTime.now, (now) =>
          Effect.sync(() => {
            const horizon = DateTime.toEpochMillis(now) - minInterval
            for (const [id, at] of recorded) if (at < horizon) recorded.delete(id)
          })))
      )
    })

    yield* flushTokenUse.pipe(
      Effect.catch((e) => Effect.logWarning("could not record token use", { error: e.message })),
      Effect.repeat(Schedule.spaced(options.flushInterval)),
      Effect.forkScoped
    )
    yield* Effect.addFinalizer(() =>
      flushTokenUse.pipe(Effect.catch((e) => Effect.logWarning("could not record token use", { error: e.message })))
    )

    // Every API request passes here: a few flat steps, no generator.
    const authenticate = (authorization: string | undefined): Effect.Effect<Principal, AuthenticationError | StorageError> => {
      if (authorization === undefined || authorization.trim() === "") return Effect.fail(new MissingAuthorization())
      const token = bearerToken(authorization)
      if (token === undefined || !isWellFormedToken(token)) return Effect.fail(new InvalidToken())
      return crypto.sha256Hex(token).pipe(
        Effect.flatMap(accounts.findTokenByHash),
        Effect.flatMap((found): Effect.Effect<Principal, InvalidToken | TokenExpired> => {
          if (Option.isNone(found)) return Effect.fail(new InvalidToken())
          return Effect.flatMap(DateTime.now, (now): Effect.Effect<Principal, TokenExpired> => {
            if (isExpired(found.value.token.expires_at, now)) return Effect.fail(new TokenExpired())
            noteUse(found.value.token, now)
            return Effect.succeed({ user: found.value.user, token_id: found.value.token.id })
          })
        })
      )
    }

    const getUser = (id: string) =>
      (isUuid(id) ? accounts.findUser(id) : Effect.succeedNone).pipe(
        Effect.flatMap(Option.match({ onNone: () => Effect.fail(new UserNotFound()), onSome: Effect.succeed }))
      )

    const currentUser = (user: User): Effect.Effect<CurrentUser, StorageError> =>
      Effect.gen(function*() {
        const now = yield* DateTime.now
        const [active, today, templateCount, runnerCount] = yield* Effect.all([
          workflows.countActive(user.id),
          workflows.countCreatedSince(user.id, DateTime.startOf(now, "day")),
          templates.count(user.id),
          runners.count(user.id)
        ])
        return {
          id: user.id,
          email: user.email,
          tier: user.tier,
          limits: policy.limitsFor(user.tier),
          usage: { active_workflows: active, workflows_today: today, templates: templateCount, runners: runnerCount },
          created_at: user.created_at
        }
      })

    return AccountService.of({
      authenticate,
      currentUser: (user) => currentUser(user),
      userDetail: (id) =>
        Effect.flatMap(getUser(id), (user) =>
          Effect.map(currentUser(user), ({ limits, usage }): UserDetail => ({ ...user, limits, usage }))),
      listUsers: (input) => Effect.flatMap(pageOf(input), (page) => accounts.listUsers({ ...page, tier: input.tier })),
      createUser: (input) =>
        Effect.gen(function*() {
          const req = yield* decodeUser(input)
          const now = yield* DateTime.now
          return yield* accounts.insertUser({
            id: (yield* ids.next) as UserId,
            email: req.email ?? null,
            tier: req.tier,
            created_at: now,
            updated_at: now
          })
        }),
      getUser,
      updateUser: (id, input) =>
        Effect.gen(function*() {
          const req = yield* decodeUpdate(input)
          const current = yield* getUser(id)
          return yield* accounts.updateUser(id, changesOf(current, { tier: req.tier }, yield* DateTime.now))
        }),
      issueToken: (userId, input) =>
        Effect.gen(function*() {
          const req = yield* decodeToken(input)
          const user = yield* getUser(userId)
          if (req.expires_at !== undefined && req.expires_at !== null && isExpired(req.expires_at, yield* DateTime.now)) {
            return yield* Effect.fail(ValidationError.field("expires_at", "must be in the future"))
          }
          const value = yield* generateToken
          const now = yield* DateTime.now
          const token: ApiToken = {
            id: (yield* ids.next) as TokenId,
            user_id: user.id,
            name: req.name,
            token_hash: yield* crypto.sha256Hex(value),
            expires_at: req.expires_at ?? null,
            last_used_at: null,
            created_at: now
          }
          yield* accounts.insertToken(token)
          return { id: token.id, name: token.name, token: value, expires_at: token.expires_at, created_at: token.created_at }
        }).pipe(Effect.provideService(Crypto, crypto)),
      listTokens: (userId) =>
        Effect.flatMap(getUser(userId), (u) => Effect.map(accounts.listTokens(u.id), (ts) => ts.map(toApiTokenView))),
      revokeToken: (id) =>
        (isUuid(id) ? accounts.deleteToken(id) : Effect.succeed(false)).pipe(
          Effect.flatMap((deleted) => deleted ? Effect.void : Effect.fail(new TokenNotFound()))
        ),
      flushTokenUse
    })
  })
}
