/** Dispatch: which runner takes a workflow, and driving each runner's work to its end. */
export { DispatchQueue, type RunnerLease, RunnerOwnership } from "./Dispatch.js"
export { defaultDispatcherOptions, Dispatcher, type DispatcherOptions } from "./Dispatcher.js"
export * as Lifecycle from "./Lifecycle.js"
export { noEligibleRunner, Scheduler } from "./Scheduler.js"
export { eligibleRunners, managedRunnerServes, pickRunner } from "./Scheduling.js"
