/**
 * @wes/core: the pure domain of WES. Imports `effect` only. One folder per feature (accounts,
 * templates, runners, workflows, dispatch) plus what they share; each folder's index.ts is the
 * list of what it makes public, and this file re-exports those lists.
 */
export * from "./accounts/index.js"
export * from "./capabilities/index.js"
export * from "./dispatch/index.js"
export * from "./Embedded.js"
export * from "./observability/index.js"
export * from "./runners/index.js"
export * from "./shared/index.js"
export * from "./templates/index.js"
export * from "./UseCases.js"
export * from "./workflows/index.js"
export * from "./webhooks/index.js"
