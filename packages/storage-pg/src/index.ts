/**
 * @wes/storage-pg: every store interface of @wes/core on PostgreSQL (`@effect/sql-pg`): the
 * production store, shared by any number of `wes serve` instances. Migrations run at start;
 * workflow events are a table announced with LISTEN/NOTIFY; blobs can live in the database;
 * dispatcher instances share work through claims and runner leases.
 */
export * from "./Migrations.js"
export * from "./PgAgentPresence.js"
export * from "./PgAccountRepository.js"
export { deletePrefixStatement } from "./PgBlobRange.js"
export * from "./PgBlobStore.js"
export * from "./PgDispatchQueue.js"
export * from "./PgEventBus.js"
export { DEFAULT_EVENTS_CHANNEL, type EventWakeups, makeEventWakeups, type PgEventBusOptions } from "./PgEventWakeups.js"
export type { PgListenOptions } from "./PgListener.js"
export * from "./PgManagedRunnerRepository.js"
export * from "./PgPreviews.js"
export * from "./PgRetention.js"
export * from "./PgRunnerLoad.js"
export * from "./PgRunnerOwnership.js"
export * from "./PgWebhookRepository.js"
export * from "./PgRunnerRepository.js"
export * from "./PgRunnerTokenRepository.js"
export * from "./PgStore.js"
export * from "./PgTemplateRepository.js"
export * from "./PgWorkflowRepository.js"
