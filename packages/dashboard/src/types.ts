/**
 * The /v1 resources as the dashboard holds them: what the typed client of @wes/api decodes, the
 * value side of the schemas the HttpApi declaration uses (timestamps are `DateTime.Utc`). The
 * declaration stays the one description of the contract.
 */
import type {
  CurrentUser,
  ManagedRunnerView,
  RunnerResponse,
  Template,
  TemplateListItem,
  WorkflowDetail,
  WorkflowOutputView,
  WorkflowParameter,
  WorkflowStatus as WorkflowStatusSchema,
  WorkflowSummary
} from "@wes/core"

export type WorkflowSummaryData = typeof WorkflowSummary.Type
export type WorkflowDetailData = typeof WorkflowDetail.Type
export type OutputData = typeof WorkflowOutputView.Type
export type TemplateData = typeof Template.Type
export type TemplateListItemData = typeof TemplateListItem.Type
export type RunnerData = typeof RunnerResponse.Type
export type ManagedRunnerData = typeof ManagedRunnerView.Type
export type CurrentUserData = typeof CurrentUser.Type
export type WorkflowParameterData = typeof WorkflowParameter.Type
/** What a parameter's value is converted to on create (null: sent as text). */
export type InputTypeData = NonNullable<WorkflowParameterData["type"]>
export type Status = typeof WorkflowStatusSchema.Type

/** The statuses, in the order of a workflow's life, and which of them are final (from the core). */
export { isTerminal as isFinished, WorkflowStatus } from "@wes/core"
