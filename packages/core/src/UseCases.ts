/** Wiring of the use-case services over a store, a runner gateway and the platform services. */
import * as Layer from "effect/Layer"
import type { AccountRepository } from "./AccountRepository.js"
import { AccountService, defaultTokenUseOptions, type TokenUseOptions } from "./AccountService.js"
import type { BlobStore } from "./BlobStore.js"
import { Crypto, CryptoWeb } from "./Crypto.js"
import type { DispatchQueue, RunnerOwnership } from "./Dispatch.js"
import { IdGenerator, IdGeneratorLive } from "./Ids.js"
import type { ManagedRunnerRepository } from "./ManagedRunnerRepository.js"
import { ManagedRunnerService } from "./ManagedRunnerService.js"
import type { RunnerGateway } from "./RunnerGateway.js"
import type { RunnerProbe } from "./RunnerProbe.js"
import type { RunnerRepository } from "./RunnerRepository.js"
import { RunnerService } from "./RunnerService.js"
import { Scheduler } from "./Scheduler.js"
import type { TemplateRepository } from "./TemplateRepository.js"
import { TemplateService } from "./TemplateService.js"
import type { TierPolicy } from "./Tier.js"
import type { Transactor } from "./Transactor.js"
import type { WorkflowEventBus } from "./WorkflowEvents.js"
import type { WorkflowRepository } from "./WorkflowRepository.js"
import { WorkflowService } from "./WorkflowService.js"

/** The services a store adapter provides (`@wes/storage-memory`, `@wes/storage-pg`). */
export type StoreServices =
  | DispatchQueue
  | RunnerOwnership
  | WorkflowRepository
  | TemplateRepository
  | RunnerRepository
  | ManagedRunnerRepository
  | AccountRepository
  | WorkflowEventBus
  | BlobStore
  | Transactor

/** The use cases. */
export type UseCaseServices =
  | WorkflowService
  | TemplateService
  | RunnerService
  | ManagedRunnerService
  | AccountService
  | Scheduler

/** Ids (UUID v7) and crypto from the Web Crypto API. */
export const PlatformLive: Layer.Layer<IdGenerator | Crypto> = IdGeneratorLive.pipe(Layer.provideMerge(CryptoWeb))

/** Every use case, over a store, a gateway, a tier policy, a probe and the platform services. */
export const useCasesLayer = (
  options: { readonly tokenUse?: TokenUseOptions } = {}
): Layer.Layer<
  UseCaseServices,
  never,
  StoreServices | RunnerGateway | TierPolicy | RunnerProbe | IdGenerator | Crypto
> => {
  const scheduler = Scheduler.Live
  const workflows = WorkflowService.Live.pipe(Layer.provide(scheduler))
  return Layer.mergeAll(
    workflows,
    TemplateService.Live,
    RunnerService.Live,
    ManagedRunnerService.Live,
    AccountService.layer(options.tokenUse ?? defaultTokenUseOptions),
    scheduler
  )
}
