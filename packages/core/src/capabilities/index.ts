/** Runners' capabilities: what their /object_info offers, what a workflow needs, and the match. */
export { CapabilityRepository, StoredCapabilities } from "./CapabilityRepository.js"
export {
  type CapabilityIndex,
  describeMissing,
  indexSummary,
  lacksNothing,
  lacksOnlyParams,
  type Missing,
  missingOn,
  type ModelNeed,
  type Needs,
  needsOf,
  workflowNeeds
} from "./Needs.js"
export {
  type CapabilitiesOptions,
  defaultCapabilitiesOptions,
  type KnownCapabilities,
  RunnerCapabilities
} from "./RunnerCapabilities.js"
export { CapabilitiesView, toCapabilitiesView } from "./View.js"
export { CapabilitySummary, modelFileCount, normalizePath, summarize, summaryHash } from "./Summary.js"
export { InputType, inputTypeOf, looksLikeFile } from "./InputTypes.js"
export { convertTo, describeType, inferType } from "./Conversion.js"
export {
  describeMismatch,
  indexInputTypes,
  type InputTypeIndex,
  mismatchesOn,
  parameterTypeError,
  type ParamMismatch,
  type ParamUse,
  paramUses,
  typeAt,
  typedPrompt
} from "./TypedParams.js"
