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
  runnerViewFields,
  RunnerView,
  toManagedRunnerView,
  unmaskHeaders,
  UpdateManagedRunnerRequest,
  UpdateRunnerRequest,
  userRunnerTarget,
  withMaskedHeaders
} from "./Runner.js"
export {
  type Download,
  inputReference,
  type NodeReplacements,
  type NodeProgressState,
  type ObjectInfo,
  type OutputFile,
  type PromptHistory,
  PromptRejected,
  type PromptStatus,
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
export {
  comfyUIWarning,
  EXACT_INTERRUPT_VERSION,
  MIN_COMFYUI_VERSION,
  parseVersion,
  RunnerComfyUI,
  RunnerDevice,
  supportedComfyUI,
  versionSupport
} from "./ComfyUIVersion.js"
export { PROBE_MESSAGES, RunnerProbe } from "./RunnerProbe.js"
export { type RunnerListQuery, RunnerRepository } from "./RunnerRepository.js"
export { HISTORY_LENGTH, type ListRunnersInput, RunnerService } from "./RunnerService.js"
