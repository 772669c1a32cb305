/**
 * @wes/core: the pure domain of WES. Imports `effect` only. Its folders depend one way:
 * `domain/` (records, ids, errors, tiers, the rules over them) <- `ports/` (what a store, a runner
 * gateway and a webhook sender provide) <- `usecases/` <- `dispatch/`; the wiring at the top
 * (UseCases.ts, Embedded.ts) composes them. Lint refuses an import against that order
 * (eslint.config.js). This file is the package's public surface, by name: what the adapters
 * (stores, runner client, HTTP server) and embedders use. Everything else stays internal.
 */

// The embedded facade (a promise API) and the layers that compose WES
export { createWes, embeddedLayer, type Wes, type WesCreateWorkflow, type WesFile, type WesIssuedToken, type WesListWorkflows, type WesOptions, type WesOutput, type WesOutputContent, type WesRunner, type WesServices, type WesUser, type WesUserRef, type WesWorkflow, type WesWorkflowEvent, type WesWorkflowSummary } from "./Embedded.js"
export { PlatformLive, type StoreServices, type UseCaseServices, useCasesLayer } from "./UseCases.js"

// Records, ids, errors, tiers and the rules over them
export { ApiToken, ApiTokenView, CreateUserRequest, CurrentUser, IssueTokenRequest, IssuedToken, User, UserDetail } from "./domain/Account.js"
export { concatBytes, crc32 } from "./domain/Bytes.js"
export { RunnerComfyUI, parseVersion } from "./domain/ComfyUIVersion.js"
export { Crypto } from "./domain/Crypto.js"
export { type RetryOptions, type SendResult } from "./domain/DeliveryPolicy.js"
export { type ApiError, apiErrors, Conflict, DeliveryNotFound, FieldIssue, InvalidToken, ManagedRunnerNotFound, ManagedRunnersForbidden, MissingAuthorization, MissingCapabilities, NoEligibleRunner, type NotFound, OutputExpired, OutputNotFound, RunnerNotFound, RunnerProbeFailed, StorageError, TemplateNotFound, TierLimitExceeded, TokenExpired, TokenNotFound, UserNotFound, ValidationError, WebhookNotFound, WorkflowNotFound } from "./domain/Errors.js"
export { IdGenerator, IdGeneratorLive, ManagedRunnerId, RunnerId, RunnerTokenId, WorkflowId, isUuid } from "./domain/Ids.js"
export { IssuedRunnerToken, KEPT_REVOKED_RUNNER_TOKENS, MAX_LIVE_RUNNER_TOKENS, RUNNER_TOKEN_PREFIX, RunnerToken, RunnerTokenView, generateRunnerToken, isWellFormedRunnerToken } from "./domain/RunnerToken.js"
export { Int, JSON_MAX_BYTES, JSON_MAX_DEPTH, JsonObject, Timestamp, depthMessage, isJsonObject, sizeMessage, textNestsDeeperThan, utf8Length } from "./domain/Json.js"
export { LimitReached } from "./domain/LimitReached.js"
export { decodeModels, mergeModels, modelPlace } from "./domain/ModelFiles.js"
export { MISSING_MODEL_WEIGHT, missingModelCount } from "./domain/ModelPreference.js"
export { PriorityAging, byAge, orderWaiting } from "./domain/Ordering.js"
export { type PageRequest, type Paged, pageBounds, paginate } from "./domain/Pagination.js"
export { DescribeParametersRequest, WorkflowParameter, WorkflowParameters } from "./domain/ParameterView.js"
export { type Placeholder, type SuppliedParam, findPlaceholders, isParamField, placeholderKey } from "./domain/Placeholders.js"
export { AGENT_ENDPOINT, CreateManagedRunnerRequest, CreateRunnerRequest, ManagedRunner, ManagedRunnerAdminView, ManagedRunnerResponse, ManagedRunnerView, Runner, RunnerConnection, RunnerResponse, RunnerStatus, type RunnerTarget, RunnerView, UpdateManagedRunnerRequest, UpdateRunnerRequest, managedRunnerTarget, userRunnerTarget, withMaskedHeaders } from "./domain/Runner.js"
export { expiryOf, outputExpired, type RetentionCutoffs, retentionCutoffs } from "./domain/Retention.js"
export { Template, TemplateListItem, toTemplateListItem } from "./domain/Template.js"
export { RunnerType, Tier, TierPolicy, TierTableOverride } from "./domain/Tier.js"
export { sizeText } from "./domain/SizeText.js"
export { fromSchemaError } from "./domain/Validation.js"
export { DELIVERY_WINDOW, DeliveryAttempt, DeliveryView, WebhookDelivery, WebhookEndpoint, WebhookView, checkWebhookUrl, deliveryPayload, eventTypeOf, hookedStatuses, isHooked } from "./domain/Webhook.js"
export { Priority, type RunnerRef, Workflow, WorkflowDetail, WorkflowHead, WorkflowOutput, WorkflowOutputView, WorkflowStatus, WorkflowSummary, activeStatuses, isTerminal, runnerOf, terminalStatuses, toDetail, toSummary } from "./domain/Workflow.js"
export { type PlannedFields, type TransitionPlan, WorkflowTransition, applyPlan, planTransition, withCarried } from "./domain/WorkflowStatus.js"

// The ports: what a store, a runner gateway and a webhook sender provide
export { AccountRepository, type TokenOwner, type UserChanges, type UserQuery } from "./ports/AccountRepository.js"
export {
  type Blob,
  type BlobContent,
  type BlobGetOptions,
  type BlobRange,
  BlobStore,
  type DeletedBlobs,
  inputBlobKey,
  isBlobBytes,
  isSafeBlobKey,
  isSafeBlobPrefix,
  outputBlobKey,
  sanitizeFilename,
  type SignedUrlOptions
} from "./ports/BlobStore.js"
export { type DueWorkflow, type MarkedExpired, RetentionRepository } from "./ports/RetentionRepository.js"
export { CapabilityRepository, StoredCapabilities } from "./ports/CapabilityRepository.js"
export type { Changes } from "./ports/Changes.js"
export { type ClaimedWorkflow, DispatchQueue, type RunnerLease, RunnerOwnership, type RunnerQueue, WAKE_ALL } from "./ports/Dispatch.js"
export { type FetchedInput, InputFetcher, InputFetchFailed, InputFetchReason, isInputUrl } from "./ports/InputFetcher.js"
export { type ManagedRunnerChanges, type ManagedRunnerQuery, ManagedRunnerRepository } from "./ports/ManagedRunnerRepository.js"
export { type Download, type NodeProgressState, type NodeReplacements, type ObjectInfo, type OutputFile, type PromptHistory, PromptRejected, type PromptStatus, PromptWithheld, type QueueSnapshot, type RunnerError, type RunnerEvent, RunnerGateway, type RunnerInfo, RunnerRequestFailed, RunnerUnreachable, type SubmitPrompt, type Submitted, UPLOAD_SUBFOLDER, type UploadedInput } from "./ports/RunnerGateway.js"
export { type AgentIdentity, AgentTokens } from "./ports/AgentTokens.js"
export { AgentPresence, type AgentPresenceRecord, presenceGuardedOwnership } from "./ports/AgentPresence.js"
export { AgentStatus, MAX_MODEL_FILES, MODEL_FOLDERS, ModelFile, ModelFiles, ModelFolder, PlacedModel, ProvisionFailed, type ProvisionProgress, RunnerAgents, type RunFiles } from "./ports/RunnerAgents.js"
export { AgentMinFreeDisk, type AgentHealthOptions, claimBlockedReason, DEFAULT_MIN_FREE_DISK_BYTES, diskBlockedReason, diskText } from "./domain/AgentHealth.js"
export { agentView, type ReportedAgentStatus, RunnerAgentView } from "./domain/AgentView.js"
export { type RunnerCandidate, RunnerLoad } from "./ports/RunnerLoad.js"
export { PROBE_MESSAGES, RunnerProbe } from "./ports/RunnerProbe.js"
export { type RunnerChanges, type RunnerListQuery, RunnerRepository } from "./ports/RunnerRepository.js"
export { type RunnerTokenInsert, RunnerTokenRepository } from "./ports/RunnerTokenRepository.js"
export { type TemplateChanges, TemplateRepository } from "./ports/TemplateRepository.js"
export { type DeliveryOutcome, WebhookRepository } from "./ports/WebhookRepository.js"
export { type WebhookMessage, WebhookSender } from "./ports/WebhookSender.js"
export { encodedSummary, makeWakeUps, makeWakeUpSlot, type NewWorkflowEvent, outputData, READ_BATCH, subscribeFromLog, summaryData, transitionEvents, type WakeUp, type WakeUpSlot, WorkflowEvent, WorkflowEventBus, WorkflowEventType } from "./ports/WorkflowEvents.js"
export { makePreviewSlots, PREVIEWS_PER_SECOND, type WorkflowPreview, WorkflowPreviews } from "./ports/WorkflowPreviews.js"
export { DuplicateIdempotencyKey, type TransitionOutcome, type TransitionRequest, type WorkflowInsertLimits, type WorkflowInsertOptions, type WorkflowListQuery, WorkflowRepository } from "./ports/WorkflowRepository.js"

// The use cases
export { AccountService, type Principal, UpdateUserRequest, bearerToken } from "./usecases/AccountService.js"
export { AgentTokenService, AgentTokensLive } from "./usecases/AgentTokenService.js"
export { defaultDelivererOptions, runDeliverer } from "./usecases/Deliverer.js"
export { ManagedRunnerService } from "./usecases/ManagedRunnerService.js"
export { dispatchAttempts, httpDuration, httpRequests, observeWorkflowStatuses, outputTransfer, sseSubscribers, storeErrors } from "./usecases/Metrics.js"
export { defaultRetentionOptions, type RetentionOptions, runRetention, sweepOnce, type SweepReport } from "./usecases/Retention.js"
export { blobStoredBytes, prunedDeliveries, prunedEvents, retentionDeletedBlobs, retentionDeletedBytes, retentionExpiredWorkflows } from "./usecases/RetentionMetrics.js"
export { type CapabilitiesOptions, RunnerCapabilities } from "./usecases/RunnerCapabilities.js"
export { RunnerService } from "./usecases/RunnerService.js"
export { TemplateService } from "./usecases/TemplateService.js"
export { WebhookService } from "./usecases/WebhookService.js"
export { type FollowStart, type OutputArchive, type StoredOutput, WorkflowService } from "./usecases/WorkflowService.js"
export { type UploadedFile } from "./usecases/workflow/Inputs.js"
export { URL_INPUTS_DISABLED } from "./usecases/workflow/UrlInputs.js"

// The dispatcher
export { Dispatcher, type DispatcherOptions } from "./dispatch/Dispatcher.js"
