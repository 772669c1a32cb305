/**
 * The wire (JSON) forms of the resources read most often, written out by hand: a workflow's
 * summary (every status event carries one) and detail (what clients poll), and the caller's
 * view. Each gives exactly what encoding with its Schema gives, keys in the same order, so
 * `JSON.stringify` of either is the same bytes (a property test holds them together); they only
 * skip the Schema walk, which re-checks the whole stored workflow JSON on every encode.
 */
import * as DateTime from "effect/DateTime"
import type { CurrentUser } from "./accounts/Account.js"
import type { Workflow, WorkflowHead } from "./workflows/Workflow.js"

const iso = (t: DateTime.Utc): string => DateTime.formatIso(t)
const isoOrNull = (t: DateTime.Utc | null): string | null => (t === null ? null : DateTime.formatIso(t))

/** `Schema.encode(WorkflowSummary)(toSummary(w))`. */
export const summaryJson = (w: WorkflowHead) => ({
  id: w.id as string,
  name: w.name,
  status: w.status,
  tags: w.tags,
  created_at: iso(w.created_at),
  updated_at: iso(w.updated_at),
  started_at: isoOrNull(w.started_at),
  completed_at: isoOrNull(w.completed_at)
})

/** `Schema.encode(WorkflowDetail)(toDetail(w))`. */
export const detailJson = (w: Workflow) => ({
  id: w.id as string,
  name: w.name,
  status: w.status,
  tags: w.tags,
  created_at: iso(w.created_at),
  updated_at: iso(w.updated_at),
  started_at: isoOrNull(w.started_at),
  completed_at: isoOrNull(w.completed_at),
  user_id: w.user_id as string,
  user_runner_id: w.user_runner_id as string | null,
  managed_runner_id: w.managed_runner_id as string | null,
  workflow_json: w.workflow_json,
  workflow_params: w.workflow_params,
  prompt_id: w.prompt_id,
  queue_number: w.queue_number,
  error_node: w.error_node,
  exception_type: w.exception_type,
  exception_message: w.exception_message
})

/** `Schema.encode(CurrentUser)(view)`. */
export const currentUserJson = (view: CurrentUser) => ({
  id: view.id as string,
  email: view.email,
  tier: view.tier,
  limits: {
    active_workflows: view.limits.active_workflows,
    workflows_per_day: view.limits.workflows_per_day,
    templates: view.limits.templates,
    runners: view.limits.runners,
    workflow_params: view.limits.workflow_params
  },
  usage: {
    active_workflows: view.usage.active_workflows,
    workflows_today: view.usage.workflows_today,
    templates: view.usage.templates,
    runners: view.usage.runners
  },
  created_at: iso(view.created_at)
})
