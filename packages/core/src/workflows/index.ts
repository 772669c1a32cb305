/** Workflows: the resource, its state machine, placeholders, events, storage and use cases. */
export {
  applyPlan,
  type FailureDetails,
  type PlannedEvent,
  type PlannedFields,
  planTransition,
  type TransitionPlan,
  transitions,
  type TransitionTag,
  withCarried,
  WorkflowTransition
} from "./WorkflowStatus.js"
export {
  findPlaceholders,
  isParamField,
  type Placeholder,
  type PlaceholderKind,
  placeholderKey,
  parsePlaceholder,
  resolveParams,
  substitute,
  substituteWith,
  type SuppliedParam
} from "./Placeholders.js"
export {
  DescribeParametersRequest,
  describeParameters,
  ParameterInput,
  WorkflowParameter,
  WorkflowParameters
} from "./ParameterView.js"
export {
  activeStatuses,
  refOf,
  type QueueEstimate,
  queueEstimateFields,
  type WorkflowView,
  Priority,
  isTerminal,
  type RunnerRef,
  runnerOf,
  terminalStatuses,
  toDetail,
  toSummary,
  Workflow,
  WorkflowAttempt,
  WorkflowDetail,
  WorkflowHead,
  WorkflowOutput,
  WorkflowOutputView,
  WorkflowParam,
  WorkflowStatus,
  WorkflowSummary
} from "./Workflow.js"
export {
  type NewWorkflowEvent,
  outputData,
  READ_BATCH,
  subscribeFromLog,
  type WakeUp,
  makeWakeUps,
  makeWakeUpSlot,
  type WakeUpSlot,
  summaryData,
  transitionEvents,
  WorkflowEvent,
  WorkflowEventBus,
  WorkflowEventType
} from "./WorkflowEvents.js"
export { checkJsonText, parseWorkflowJson, UI_FORMAT_MESSAGE, validateWorkflowJson } from "./WorkflowJson.js"
export {
  DuplicateIdempotencyKey,
  type TransitionOutcome,
  type TransitionRequest,
  type WorkflowInsertLimits,
  type WorkflowInsertOptions,
  type WorkflowListQuery,
  WorkflowRepository
} from "./WorkflowRepository.js"
export {
  asFirstAnswered,
  type CreateWorkflowInput,
  type DescribeParametersInput,
  type FollowStart,
  IDEMPOTENCY_WINDOW,
  type ListWorkflowsInput,
  type RerunWorkflowInput,
  type UploadedFile,
  WorkflowService
} from "./WorkflowService.js"
