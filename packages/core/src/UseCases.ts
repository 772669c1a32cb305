/** Wiring of the use-case services over a store, a runner gateway and the platform services. */
import * as Layer from "effect/Layer"
import type { AccountRepository } from "./accounts/AccountRepository.js"
import { AccountService, defaultTokenUseOptions, type TokenUseOptions } from "./accounts/AccountService.js"
import type { CapabilityRepository } from "./capabilities/CapabilityRepository.js"
import { type CapabilitiesOptions, RunnerCapabilities } from "./capabilities/RunnerCapabilities.js"
import type { BlobStore } from "./shared/BlobStore.js"
import { Crypto, CryptoWeb } from "./shared/Crypto.js"
import type { DispatchQueue, RunnerOwnership } from "./dispatch/Dispatch.js"
import type { RunnerLoad } from "./dispatch/RunnerLoad.js"
import { IdGenerator, IdGeneratorLive } from "./shared/Ids.js"
import type { ManagedRunnerRepository } from "./runners/ManagedRunnerRepository.js"
import { ManagedRunnerService } from "./runners/ManagedRunnerService.js"
import type { RunnerGateway } from "./runners/RunnerGateway.js"
import type { RunnerProbe } from "./runners/RunnerProbe.js"
import type { RunnerRepository } from "./runners/RunnerRepository.js"
import { RunnerService } from "./runners/RunnerService.js"
import { Scheduler } from "./dispatch/Scheduler.js"
import { RunTimes } from "./dispatch/RunTimes.js"
import type { TemplateRepository } from "./templates/TemplateRepository.js"
import { TemplateService } from "./templates/TemplateService.js"
import type { TierPolicy } from "./accounts/Tier.js"
import type { WorkflowEventBus } from "./workflows/WorkflowEvents.js"
import type { WorkflowRepository } from "./workflows/WorkflowRepository.js"
import { WorkflowService } from "./workflows/WorkflowService.js"
import type { WebhookRepository } from "./webhooks/WebhookRepository.js"
import { WebhookService, WebhookServiceLive } from "./webhooks/WebhookService.js"

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
  | BlobStore
  | CapabilityRepository
  | WebhookRepository

/** The use cases. */
export type UseCaseServices =
  | WorkflowService
  | TemplateService
  | RunnerService
  | ManagedRunnerService
  | AccountService
  | Scheduler
  | RunTimes
  | RunnerCapabilities
  | WebhookService

/** Ids (UUID v7) and crypto from the Web Crypto API. */
export const PlatformLive: Layer.Layer<IdGenerator | Crypto> = IdGeneratorLive.pipe(Layer.provideMerge(CryptoWeb))

/**
 * Every use case, over a store, a gateway, a tier policy, a probe and the platform services.
 * `capabilities` tunes how runners' capabilities are read and cached.
 */
export const useCasesLayer = (
  options: { readonly tokenUse?: TokenUseOptions; readonly capabilities?: Partial<CapabilitiesOptions> } = {}
): Layer.Layer<
  UseCaseServices,
  never,
  StoreServices | RunnerGateway | TierPolicy | RunnerProbe | IdGenerator | Crypto
> => {
  const capabilities = RunnerCapabilities.layer(options.capabilities)
  const scheduler = Scheduler.Live.pipe(Layer.provideMerge(capabilities))
  const workflows = WorkflowService.Live.pipe(Layer.provide(scheduler), Layer.provideMerge(RunTimes.layer))
  return Layer.mergeAll(
    workflows,
    TemplateService.Live,
    RunnerService.Live,
    ManagedRunnerService.Live,
    AccountService.layer(options.tokenUse ?? defaultTokenUseOptions),
    scheduler,
    WebhookServiceLive
  ).pipe(Layer.provideMerge(capabilities))
}
