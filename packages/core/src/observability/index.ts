/** What the service measures (effect Metrics). */
export {
  dispatchAttempts,
  httpDuration,
  httpRequests,
  outputTransfer,
  queueWait,
  recordFinished,
  runnersConnected,
  runTime,
  sseSubscribers,
  storeErrors,
  workflowsCreated,
  workflowsFinished
} from "./Metrics.js"
