/** Workflows: the resource, its state machine, placeholders, events, storage and use cases. */
export {
  type FailureDetails,
  transitions,
  type TransitionTag,
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
  type SuppliedParam
} from "./Placeholders.js"
export {
  activeStatuses,
  isTerminal,
  type RunnerRef,
  runnerOf,
  terminalStatuses,
  toDetail,
  toSummary,
  Workflow,
  WorkflowDetail,
  WorkflowOutput,
  WorkflowOutputView,
  WorkflowParam,
  WorkflowStatus,
  WorkflowSummary
} from "./Workflow.js"
export {
  type NewWorkflowEvent,
  READ_BATCH,
  subscribeFromLog,
  WorkflowEvent,
  WorkflowEventBus,
  WorkflowEventType
} from "./WorkflowEvents.js"
export { parseWorkflowJson, UI_FORMAT_MESSAGE, validateWorkflowJson } from "./WorkflowJson.js"
export {
  DuplicateIdempotencyKey,
  type WorkflowInsertLimits,
  type WorkflowInsertOptions,
  type WorkflowListQuery,
  WorkflowRepository
} from "./WorkflowRepository.js"
export {
  type CreateWorkflowInput,
  type FollowStart,
  type ListWorkflowsInput,
  type RerunWorkflowInput,
  type UploadedFile,
  WorkflowService
} from "./WorkflowService.js"
