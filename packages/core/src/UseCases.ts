/** Wiring of the use-case services over a store, a runner gateway and the platform services. */
import * as Layer from "effect/Layer"
import type { AccountRepository } from "./ports/AccountRepository.js"
import { AccountService, defaultTokenUseOptions, type TokenUseOptions } from "./usecases/AccountService.js"
import type { CapabilityRepository } from "./ports/CapabilityRepository.js"
import { type CapabilitiesOptions, RunnerCapabilities } from "./usecases/RunnerCapabilities.js"
import type { BlobStore } from "./ports/BlobStore.js"
import { Crypto, CryptoWeb } from "./domain/Crypto.js"
import type { DispatchQueue, RunnerOwnership } from "./ports/Dispatch.js"
import type { RunnerLoad } from "./ports/RunnerLoad.js"
import { IdGenerator, IdGeneratorLive } from "./domain/Ids.js"
import type { ManagedRunnerRepository } from "./ports/ManagedRunnerRepository.js"
import { ManagedRunnerService } from "./usecases/ManagedRunnerService.js"
import type { RunnerGateway } from "./ports/RunnerGateway.js"
import type { RunnerProbe } from "./ports/RunnerProbe.js"
import type { RunnerRepository } from "./ports/RunnerRepository.js"
import type { RunnerTokenRepository } from "./ports/RunnerTokenRepository.js"
import type { AgentTokens } from "./ports/AgentTokens.js"
import type { AgentPresence } from "./ports/AgentPresence.js"
import { AgentTokenService, AgentTokensLive } from "./usecases/AgentTokenService.js"
import { RunnerService } from "./usecases/RunnerService.js"
import { Scheduler } from "./usecases/Scheduler.js"
import { RunTimes } from "./usecases/RunTimes.js"
import type { TemplateRepository } from "./ports/TemplateRepository.js"
import { TemplateService } from "./usecases/TemplateService.js"
import type { TierPolicy } from "./domain/Tier.js"
import type { RetentionRepository } from "./ports/RetentionRepository.js"
import type { WorkflowEventBus } from "./ports/WorkflowEvents.js"
import type { WorkflowPreviews } from "./ports/WorkflowPreviews.js"
import type { WorkflowRepository } from "./ports/WorkflowRepository.js"
import { WorkflowService } from "./usecases/WorkflowService.js"
import type { WebhookRepository } from "./ports/WebhookRepository.js"
import { WebhookService, WebhookServiceLive } from "./usecases/WebhookService.js"
import { Dispatcher, type DispatcherOptions } from "./dispatch/Dispatcher.js"

/** The services a store adapter provides (`@wes/storage-memory`, `@wes/storage-pg`). */
export type StoreServices =
  | DispatchQueue
  | RunnerOwnership
  | RunnerLoad
  | WorkflowRepository
  | TemplateRepository
  | RunnerRepository
  | ManagedRunnerRepository
  | AccountRepository
  | WorkflowEventBus
  | WorkflowPreviews
  | BlobStore
  | RetentionRepository
  | CapabilityRepository
  | WebhookRepository
  | RunnerTokenRepository
  | AgentPresence

/** The use cases: what the HTTP edge and an embedding host call. */
export type UseCaseServices =
  | WorkflowService
  | TemplateService
  | RunnerService
  | ManagedRunnerService
  | AccountService
  | RunnerCapabilities
  | WebhookService
  | AgentTokenService
  | AgentTokens

/** What the use cases need from outside core. */
export type UseCaseNeeds = StoreServices | RunnerGateway | TierPolicy | RunnerProbe | IdGenerator | Crypto

/** Ids (UUID v7) and crypto from the Web Crypto API. */
export const PlatformLive: Layer.Layer<IdGenerator | Crypto> = IdGeneratorLive.pipe(Layer.provideMerge(CryptoWeb))

export interface UseCasesOptions {
  readonly tokenUse?: TokenUseOptions
  /** How runners' capabilities are read and cached. */
  readonly capabilities?: Partial<CapabilitiesOptions>
}

/**
 * Every use case, over a store, a gateway, a tier policy, a probe and the platform services; with
 * `dispatcher`, the dispatcher too (tuned by those options), sharing the use cases' scheduler.
 * The scheduler and the run-time averages stay internal: nothing outside core calls them.
 */
export function useCasesLayer(options?: UseCasesOptions): Layer.Layer<UseCaseServices, never, UseCaseNeeds>
export function useCasesLayer(
  options: UseCasesOptions & { readonly dispatcher: Partial<DispatcherOptions> }
): Layer.Layer<UseCaseServices | Dispatcher, never, UseCaseNeeds>
export function useCasesLayer(
  options: UseCasesOptions & { readonly dispatcher?: Partial<DispatcherOptions> } = {}
): Layer.Layer<UseCaseServices, never, UseCaseNeeds> {
  const capabilities = RunnerCapabilities.layer(options.capabilities)
  const scheduler = Scheduler.Live.pipe(Layer.provideMerge(capabilities))
  const internals = Layer.mergeAll(scheduler, RunTimes.layer)
  const useCases = Layer.mergeAll(
    WorkflowService.Live,
    TemplateService.Live,
    RunnerService.Live,
    ManagedRunnerService.Live,
    AccountService.layer(options.tokenUse ?? defaultTokenUseOptions),
    WebhookServiceLive,
    AgentTokenService.Live,
    AgentTokensLive,
    capabilities
  )
  if (options.dispatcher === undefined) return useCases.pipe(Layer.provide(internals))
  return Layer.merge(useCases, Dispatcher.layer(options.dispatcher)).pipe(Layer.provide(internals))
}
