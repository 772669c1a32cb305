/**
 * Every table but `workflows` (WorkflowRows.ts), each described once by its row schema: core's
 * record with the fields whose column form differs (timestamps, JSON) replaced. The repositories
 * read, insert and update through these (Table.ts): their column lists, decoding and encoding
 * all come from here.
 */
import {
  ApiToken,
  ManagedRunner,
  Runner,
  RunnerComfyUI,
  RunnerToken,
  StoredCapabilities,
  Template,
  TemplateListItem,
  User,
  WebhookDelivery,
  WebhookEndpoint,
  WorkflowEvent
} from "@wes/core"
import * as Schema from "effect/Schema"
import { DbNullableTimestamp, DbTimestamp, JsonColumn, JsonOf } from "./Sql.js"
import { table } from "./Table.js"

const edited = { created_at: DbTimestamp, updated_at: DbTimestamp }

/** The columns both runner tables have, in their columns' forms. */
export const runnerColumns = {
  headers: JsonColumn(Runner.fields.headers),
  comfyui: Schema.NullOr(JsonColumn(RunnerComfyUI))
}

export const runners = table("runners", Schema.Struct({ ...Runner.fields, ...runnerColumns, ...edited }))
export const managedRunners = table("managed_runners", Schema.Struct({ ...ManagedRunner.fields, ...runnerColumns, ...edited }))

export const templates = table("templates", Schema.Struct({
  ...Template.fields,
  body: JsonColumn(Template.fields.body),
  models: JsonColumn(Template.fields.models),
  ...edited
}))
/** A template without its body, as lists show it. */
export const templateItems = table("templates", Schema.Struct({ ...TemplateListItem.fields, ...edited }))

export const users = table("users", Schema.Struct({ ...User.fields, ...edited }))
export const apiTokens = table("api_tokens", Schema.Struct({
  ...ApiToken.fields,
  expires_at: DbNullableTimestamp,
  last_used_at: DbNullableTimestamp,
  created_at: DbTimestamp
}))

export const runnerTokens = table("runner_agent_tokens", Schema.Struct({
  ...RunnerToken.fields,
  created_at: DbTimestamp,
  last_used_at: DbNullableTimestamp,
  revoked_at: DbNullableTimestamp
}))

export const capabilities = table("runner_capabilities", Schema.Struct({
  ...StoredCapabilities.fields,
  summary: JsonColumn(StoredCapabilities.fields.summary),
  read_at: DbTimestamp
}))

export const webhookEndpoints = table("webhook_endpoints", Schema.Struct({
  ...WebhookEndpoint.fields,
  previous_expires_at: DbNullableTimestamp,
  ...edited
}))
export const webhookDeliveries = table("webhook_deliveries", Schema.Struct({
  ...WebhookDelivery.fields,
  created_at: DbTimestamp,
  next_attempt_at: DbNullableTimestamp,
  expires_at: DbTimestamp,
  delivered_at: DbNullableTimestamp,
  attempts: JsonOf(WebhookDelivery.fields.attempts)
}))

export const workflowEvents = table("workflow_events", Schema.Struct({ ...WorkflowEvent.fields, created_at: DbTimestamp }))
