/** Users and their API tokens. */
import * as Schema from "effect/Schema"
import { TokenId, UserId } from "./Ids.js"
import { Int, Timestamp } from "./Json.js"
import { Tier, TierLimits } from "./Tier.js"

export const User = Schema.Struct({
  id: UserId,
  email: Schema.NullOr(Schema.String),
  tier: Tier,
  created_at: Timestamp,
  updated_at: Timestamp
}).annotate({ identifier: "User" })
export interface User extends Schema.Schema.Type<typeof User> {}

/** A stored API token: only its SHA-256 hash is kept. */
export const ApiToken = Schema.Struct({
  id: TokenId,
  user_id: UserId,
  name: Schema.String,
  token_hash: Schema.String,
  expires_at: Schema.NullOr(Timestamp),
  last_used_at: Schema.NullOr(Timestamp),
  created_at: Timestamp
}).annotate({ identifier: "ApiTokenRecord" })
export interface ApiToken extends Schema.Schema.Type<typeof ApiToken> {}

/** A token as listed to the operator: never the value or the hash. */
export const ApiTokenView = Schema.Struct({
  id: TokenId,
  user_id: UserId,
  name: Schema.String,
  expires_at: Schema.NullOr(Timestamp),
  last_used_at: Schema.NullOr(Timestamp),
  created_at: Timestamp
}).annotate({ identifier: "ApiToken" })
export interface ApiTokenView extends Schema.Schema.Type<typeof ApiTokenView> {}

export const toApiTokenView = (t: ApiToken): ApiTokenView => ({
  id: t.id,
  user_id: t.user_id,
  name: t.name,
  expires_at: t.expires_at,
  last_used_at: t.last_used_at,
  created_at: t.created_at
})

/** A newly issued token: the only time its value is shown. */
export const IssuedToken = Schema.Struct({
  id: TokenId,
  name: Schema.String,
  token: Schema.String,
  expires_at: Schema.NullOr(Timestamp),
  created_at: Timestamp
}).annotate({ identifier: "IssuedToken" })
export interface IssuedToken extends Schema.Schema.Type<typeof IssuedToken> {}

/** What `GET /v1/user` counts against the tier's limits. */
export const Usage = Schema.Struct({
  active_workflows: Int,
  workflows_today: Int,
  templates: Int,
  runners: Int
}).annotate({ identifier: "Usage" })
export interface Usage extends Schema.Schema.Type<typeof Usage> {}

/** `GET /v1/user`. */
export const CurrentUser = Schema.Struct({
  id: UserId,
  email: Schema.NullOr(Schema.String),
  tier: Tier,
  limits: TierLimits,
  usage: Usage,
  created_at: Timestamp
}).annotate({ identifier: "CurrentUser" })
export interface CurrentUser extends Schema.Schema.Type<typeof CurrentUser> {}

/** `GET /admin/v1/users/:id`: the user with its limits and current usage. */
export const UserDetail = Schema.Struct({
  ...User.fields,
  limits: TierLimits,
  usage: Usage
}).annotate({ identifier: "UserDetail" })
export interface UserDetail extends Schema.Schema.Type<typeof UserDetail> {}

/** Operator's body for a new user. */
export const CreateUserRequest = Schema.Struct({
  tier: Tier,
  email: Schema.optionalKey(Schema.NullOr(Schema.String.check(
    Schema.isMaxLength(320, { message: "must be at most 320 characters" }),
    Schema.isPattern(/^[^\s@]+@[^\s@]+$/, { message: "must be an email address" })
  )))
}).annotate({ identifier: "CreateUserRequest" })
export interface CreateUserRequest extends Schema.Schema.Type<typeof CreateUserRequest> {}

/** Operator's body for a new token. */
export const IssueTokenRequest = Schema.Struct({
  name: Schema.String.check(
    Schema.isMinLength(1, { message: "must be 1-100 characters" }),
    Schema.isMaxLength(100, { message: "must be 1-100 characters" })
  ),
  expires_at: Schema.optionalKey(Schema.NullOr(Timestamp))
}).annotate({ identifier: "IssueTokenRequest" })
export interface IssueTokenRequest extends Schema.Schema.Type<typeof IssueTokenRequest> {}
