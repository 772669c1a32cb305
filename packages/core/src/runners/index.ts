/** User-owned and managed runners, and the gateway and probe through which WES talks to them. */
export { type ManagedRunnerQuery, ManagedRunnerRepository } from "./ManagedRunnerRepository.js"
export { ManagedRunnerService } from "./ManagedRunnerService.js"
export {
  CreateManagedRunnerRequest,
  CreateRunnerRequest,
  isRunnerEndpoint,
  ManagedRunner,
  ManagedRunnerAdminView,
  managedRunnerTarget,
  HEADER_MASK,
  ManagedRunnerResponse,
  ManagedRunnerView,
  maskHeaders,
  Runner,
  RunnerEndpoint,
  RunnerHeaders,
  RunnerName,
  RunnerResponse,
  RunnerStatus,
  type RunnerTarget,
  RunnerView,
  toManagedRunnerView,
  unmaskHeaders,
  UpdateManagedRunnerRequest,
  UpdateRunnerRequest,
  userRunnerTarget
} from "./Runner.js"
export {
  type Download,
  inputReference,
  type NodeProgressState,
  type ObjectInfo,
  type OutputFile,
  type PromptHistory,
  PromptRejected,
  PromptWithheld,
  type QueueSnapshot,
  type RunnerError,
  type RunnerEvent,
  RunnerGateway,
  type RunnerInfo,
  RunnerRequestFailed,
  RunnerUnreachable,
  type SubmitPrompt,
  type Submitted,
  type UploadedInput
} from "./RunnerGateway.js"
export { PROBE_MESSAGES, RunnerProbe } from "./RunnerProbe.js"
export { type RunnerListQuery, RunnerRepository } from "./RunnerRepository.js"
export { HISTORY_LENGTH, type ListRunnersInput, RunnerService } from "./RunnerService.js"
