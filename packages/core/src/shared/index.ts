/** What every feature shares: errors, ids, JSON, pagination, tags, blobs, crypto, transactions. */
export { type Blob, type BlobContent, BlobStore, inputBlobKey, isBlobBytes, isSafeBlobKey, outputBlobKey, sanitizeFilename } from "./BlobStore.js"
export { concatBytes, crc32 } from "./Bytes.js"
export { Crypto, CryptoWeb } from "./Crypto.js"
export {
  type ApiError,
  Conflict,
  FieldIssue,
  IllegalTransition,
  InvalidToken,
  ManagedRunnersForbidden,
  MissingAuthorization,
  MissingCapabilities,
  NoEligibleRunner,
  NotFound,
  RunnerLack,
  RunnerProbeFailed,
  StorageError,
  TierLimitExceeded,
  TokenExpired,
  ValidationError
} from "./Errors.js"
export {
  IdGenerator,
  IdGeneratorLive,
  isUuid,
  ManagedRunnerId,
  OutputId,
  RunnerId,
  TemplateId,
  TokenId,
  UserId,
  WorkflowId
} from "./Ids.js"
export {
  depthMessage,
  Int,
  isJsonObject,
  JSON_MAX_BYTES,
  JSON_MAX_DEPTH,
  JsonObject,
  nestsDeeperThan,
  NonNegativeInt,
  sizeMessage,
  textNestsDeeperThan,
  Timestamp,
  utf8Length
} from "./Json.js"
export { LimitReached } from "./LimitReached.js"
export { type PageInput, type PageRequest, type Paged, pageBounds, paginate } from "./Pagination.js"
export { MAX_TAGS, normalizeTag, normalizeTags, parseTagList, tagsMatch } from "./Tags.js"
export { type DecodeIssue, fromDecodeIssues, fromSchemaError, fromSchemaIssue } from "./Validation.js"
