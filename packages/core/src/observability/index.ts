/** What the service measures (effect Metrics). */
export {
  httpDuration,
  httpRequests,
  queueWait,
  recordFinished,
  runTime,
  sseSubscribers,
  workflowsCreated,
  workflowsFinished
} from "./Metrics.js"
