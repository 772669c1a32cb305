/** Users, API tokens, tiers and their limits, and authentication. */
export {
  ApiToken,
  ApiTokenView,
  CreateUserRequest,
  CurrentUser,
  IssuedToken,
  IssueTokenRequest,
  toApiTokenView,
  Usage,
  User,
  UserDetail
} from "./Account.js"
export { AccountRepository, type TokenOwner, type UserQuery } from "./AccountRepository.js"
export {
  AccountService,
  type AuthenticationError,
  bearerToken,
  defaultTokenUseOptions,
  type Principal,
  type TokenUseOptions,
  UpdateUserRequest
} from "./AccountService.js"
export {
  defaultTierTable,
  type LimitName,
  limitExceeded,
  managedRunnerTypesFor,
  RunnerType,
  Tier,
  TierLimits,
  TierPolicy,
  type TierTable,
  TierTableOverride
} from "./Tier.js"
export { generateToken, hashToken, isExpired, isWellFormedToken, TOKEN_LENGTH, TOKEN_PREFIX } from "./Token.js"
