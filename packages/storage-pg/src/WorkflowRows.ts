/** How a workflow record is read from the `workflows` table (shared by the repository and the dispatch queue). */
import { Workflow } from "@wes/core"
import * as Schema from "effect/Schema"
import { DbNullableTimestamp, DbTimestamp } from "./Sql.js"

export const workflowTimestamps = {
  created_at: DbTimestamp,
  updated_at: DbTimestamp,
  started_at: DbNullableTimestamp,
  completed_at: DbNullableTimestamp
}

/** A workflow row, decoded to core's record. */
export const WorkflowRow = Schema.Struct({ ...Workflow.fields, ...workflowTimestamps, submitted_at: DbNullableTimestamp })

/** The columns `WorkflowRow` reads (not the dispatcher's claim columns). */
export const WORKFLOW_COLUMNS = `id, user_id, name, status, tags, created_at, updated_at, started_at, completed_at,
  user_runner_id, managed_runner_id, workflow_json, workflow_params, prompt_id, queue_number, error_node,
  exception_type, exception_message, idempotency_key, dispatch_attempts, submitted_at`
