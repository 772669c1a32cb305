/** Dispatch: which runner takes a workflow, and driving each runner's work to its end. */
export { type ClaimedWorkflow, DispatchQueue, type RunnerLease, RunnerOwnership } from "./Dispatch.js"
export { Dispatcher, type DispatcherDeps } from "./Dispatcher.js"
export { defaultDispatcherOptions, type DispatcherOptions, retrySchedule } from "./DispatcherOptions.js"
export * as Lifecycle from "./Lifecycle.js"
export { advanceProgress, type PromptProgress, progressPercent, startProgress } from "./Progress.js"
export { type RunnerCandidate, RunnerLoad } from "./RunnerLoad.js"
export { noEligibleRunner, Scheduler } from "./Scheduler.js"
export { eligibleRunners, managedRunnerServes, pickRunner } from "./Scheduling.js"
