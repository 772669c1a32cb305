/**
 * @wes/storage-memory: every store interface of @wes/core in memory: the embedded default.
 * One process; nothing survives a restart.
 */
import { type StoreServices, Transactor } from "@wes/core"
import * as Layer from "effect/Layer"
import { MemoryBlobStore } from "./MemoryBlobStore.js"
import { MemoryEventBus } from "./MemoryEventBus.js"
import {
  MemoryAccountRepository,
  MemoryManagedRunnerRepository,
  MemoryRunnerRepository,
  MemoryTemplateRepository
} from "./MemoryRepositories.js"
import { MemoryRunnerOwnership } from "./MemoryRunnerOwnership.js"
import { MemoryWorkflowStore } from "./MemoryWorkflowRepository.js"

export * from "./MemoryBlobStore.js"
export * from "./MemoryEventBus.js"
export * from "./MemoryRepositories.js"
export * from "./MemoryRunnerOwnership.js"
export * from "./MemoryWorkflowRepository.js"

/** A fresh, empty in-memory store: every repository, the event bus, blobs and a pass-through transactor. */
export const MemoryStoreLive: Layer.Layer<StoreServices> = Layer.mergeAll(
  MemoryWorkflowStore,
  MemoryRunnerOwnership,
  MemoryTemplateRepository,
  MemoryRunnerRepository,
  MemoryManagedRunnerRepository,
  MemoryAccountRepository,
  MemoryEventBus,
  MemoryBlobStore,
  Transactor.Passthrough
)
