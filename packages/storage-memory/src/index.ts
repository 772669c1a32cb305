/**
 * @wes/storage-memory: every store interface of @wes/core in memory: the embedded default.
 * One process; nothing survives a restart.
 */
import {
  AccountRepository,
  CapabilityRepository,
  DispatchQueue,
  ManagedRunnerRepository,
  RetentionRepository,
  RunnerLoad,
  RunnerRepository,
  RunnerTokenRepository,
  type StoreServices,
  WebhookRepository,
  WorkflowEventBus,
  WorkflowRepository
} from "@wes/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import { MemoryBlobStore } from "./MemoryBlobStore.js"
import { makeMemoryCapabilityRepository } from "./MemoryCapabilityRepository.js"
import { makeMemoryDispatchQueue } from "./MemoryDispatchQueue.js"
import { makeMemoryEventLog } from "./MemoryEventBus.js"
import { MemoryPreviews } from "./MemoryPreviews.js"
import {
  makeMemoryAccountRepository,
  makeMemoryManagedRunnerRepository,
  makeMemoryRunnerRepository,
  MemoryTemplateRepository
} from "./MemoryRepositories.js"
import { MemoryRunnerOwnership } from "./MemoryRunnerOwnership.js"
import { MemoryAgentPresence } from "./MemoryAgentPresence.js"
import { makeMemoryRunnerLoad } from "./MemoryRunnerLoad.js"
import { makeMemoryRetention } from "./MemoryRetention.js"
import { makeMemoryRunnerTokenRepository } from "./MemoryRunnerTokens.js"
import { makeMemoryWorkflowRepository } from "./MemoryWorkflowRepository.js"
import { makeMemoryWebhookRepository, WebhookTable } from "./MemoryWebhooks.js"
import { WorkflowTable } from "./WorkflowTable.js"

export * from "./MemoryBlobStore.js"
export * from "./MemoryEventBus.js"
export * from "./MemoryPreviews.js"
export * from "./MemoryRepositories.js"
export * from "./MemoryRetention.js"
export * from "./MemoryRunnerOwnership.js"
export * from "./MemoryRunnerTokens.js"
export * from "./MemoryAgentPresence.js"
export * from "./MemoryWebhooks.js"

/**
 * Workflows, their events, the dispatch queue, runners (and their capabilities), accounts, the
 * scheduling read and retention over them: one set of shared state, so a workflow's write, its
 * events and its wake-up happen in one step.
 */
export const MemoryWorkflowStore: Layer.Layer<
  | WorkflowRepository
  | WorkflowEventBus
  | DispatchQueue
  | RunnerRepository
  | ManagedRunnerRepository
  | RunnerLoad
  | CapabilityRepository
  | WebhookRepository
  | AccountRepository
  | RetentionRepository
  | RunnerTokenRepository
> = Layer.effectContext(Effect.gen(function*() {
  const table = new WorkflowTable()
  const log = makeMemoryEventLog()
  const wakeups = yield* PubSub.sliding<string>(1024)
  const runners = makeMemoryRunnerRepository()
  const managed = makeMemoryManagedRunnerRepository()
  // One pending signal is enough: the pool reads every due delivery when woken.
  const recorded = yield* Queue.sliding<void>(1)
  const webhooks = new WebhookTable(() => globalThis.crypto.randomUUID(), () => void Queue.offerUnsafe(recorded, undefined))
  // Accounts live here too: retention reads each owner's tier in its own synchronous step.
  const accounts = makeMemoryAccountRepository()
  return Context.make(WorkflowRepository, makeMemoryWorkflowRepository(table, log, (id) => void PubSub.publishUnsafe(wakeups, id), webhooks)).pipe(
    Context.add(WebhookRepository, makeMemoryWebhookRepository(webhooks, Queue.take(recorded))),
    Context.add(WorkflowEventBus, log.bus),
    Context.add(AccountRepository, accounts),
    Context.add(RetentionRepository, makeMemoryRetention(table, log, webhooks, accounts.tierOf)),
    Context.add(DispatchQueue, makeMemoryDispatchQueue(table, wakeups)),
    Context.add(RunnerRepository, runners),
    Context.add(RunnerTokenRepository, makeMemoryRunnerTokenRepository(runners.exists)),
    Context.add(ManagedRunnerRepository, managed),
    Context.add(RunnerLoad, makeMemoryRunnerLoad(runners, managed, table)),
    Context.add(CapabilityRepository, makeMemoryCapabilityRepository([runners, managed]))
  )
}))

/** A fresh, empty in-memory store: every repository, the event bus, previews, the dispatch queue and blobs. */
export const MemoryStoreLive: Layer.Layer<StoreServices> = Layer.mergeAll(
  MemoryWorkflowStore,
  MemoryPreviews,
  MemoryRunnerOwnership,
  MemoryAgentPresence,
  MemoryTemplateRepository,
  MemoryBlobStore
)
