/**
 * The /v1 resources as the dashboard receives them: the wire (encoded) side of the schemas the
 * HttpApi declaration uses, imported as types only. The
 * declaration stays the one description of the contract.
 */
import type {
  CurrentUser,
  ManagedRunnerView,
  RunnerView,
  Template,
  TemplateListItem,
  WorkflowDetail,
  WorkflowOutputView,
  WorkflowParameter,
  WorkflowStatus as WorkflowStatusSchema,
  WorkflowSummary
} from "@wes/core"
import type * as Schema from "effect/Schema"

export type WorkflowSummaryJson = Schema.Schema.Encoded<typeof WorkflowSummary>
export type WorkflowDetailJson = Schema.Schema.Encoded<typeof WorkflowDetail>
export type OutputJson = Schema.Schema.Encoded<typeof WorkflowOutputView>
export type TemplateJson = Schema.Schema.Encoded<typeof Template>
export type TemplateListItemJson = Schema.Schema.Encoded<typeof TemplateListItem>
export type RunnerJson = Schema.Schema.Encoded<typeof RunnerView>
export type ManagedRunnerJson = Schema.Schema.Encoded<typeof ManagedRunnerView>
export type CurrentUserJson = Schema.Schema.Encoded<typeof CurrentUser>
export type WorkflowParameterJson = Schema.Schema.Encoded<typeof WorkflowParameter>
/** What a parameter's value is converted to on create (null: sent as text). */
export type InputTypeJson = NonNullable<WorkflowParameterJson["type"]>
export type Status = typeof WorkflowStatusSchema.Type

/** The statuses, in the order of a workflow's life, and which of them are final (from the core). */
export { isTerminal as isFinished, WorkflowStatus } from "@wes/core"
