/** What the service measures (effect Metrics). */
export {
  dispatchAttempts,
  httpDuration,
  httpRequests,
  observeWorkflowStatuses,
  outputTransfer,
  queueWait,
  recordFinished,
  runnerInFlight,
  runnersConnected,
  runTime,
  sseSubscribers,
  storeErrors,
  workflowsCreated,
  workflowsByStatus,
  workflowsFinished
} from "./Metrics.js"
