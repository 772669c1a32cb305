/** Records for store tests: unique ids, explicit timestamps. */
import * as DateTime from "effect/DateTime"
import type { ApiToken, User } from "../domain/Account.js"
import type { ManagedRunnerId, RunnerId, TemplateId, TokenId, UserId, WorkflowId } from "../domain/Ids.js"
import type { ManagedRunner, Runner } from "../domain/Runner.js"
import type { Template } from "../domain/Template.js"
import type { Tier } from "../domain/Tier.js"
import type { Workflow } from "../domain/Workflow.js"

/** A random UUID (v4) from the Web Crypto API. */
export const uuid = (): string => globalThis.crypto.randomUUID()

/** 2026-01-01T00:00:00Z plus `minutes`. */
export const at = (minutes: number): DateTime.Utc => DateTime.makeUnsafe(Date.UTC(2026, 0, 1) + minutes * 60_000)

export const user = (over: Partial<User> = {}): User => ({
  id: uuid() as UserId,
  email: null,
  tier: "free" as Tier,
  created_at: at(0),
  updated_at: at(0),
  ...over
})

export const workflow = (userId: string, over: Partial<Workflow> = {}): Workflow => ({
  id: uuid() as WorkflowId,
  user_id: userId as UserId,
  name: "wf",
  status: "accepted",
  tags: [],
  created_at: at(0),
  updated_at: at(0),
  started_at: null,
  completed_at: null,
  user_runner_id: uuid() as RunnerId,
  managed_runner_id: null,
  workflow_json: { "1": { class_type: "EmptyImage", inputs: { width: 64, height: 64, batch_size: 1, color: 0 } } },
  workflow_params: [],
  prompt_id: null,
  queue_number: null,
  error_node: null,
  exception_type: null,
  exception_message: null,
  idempotency_key: null,
  dispatch_attempts: 0,
  transfer_ms: null,
  submitted_at: null,
  webhook_url: null,
  priority: "normal",
  attempts: [],
  models: [],
  ...over
})

export const template = (userId: string, over: Partial<Template> = {}): Template => ({
  id: uuid() as TemplateId,
  user_id: userId as UserId,
  name: "tpl",
  description: "a template",
  body: { "1": { class_type: "EmptyImage", inputs: {} } },
  models: [],
  created_at: at(0),
  updated_at: at(0),
  ...over
})

export const runner = (userId: string, over: Partial<Runner> = {}): Runner => ({
  id: uuid() as RunnerId,
  user_id: userId as UserId,
  name: "runner",
  status: "active",
  endpoint: "http://127.0.0.1:8188",
  connection: "direct",
  tags: [],
  headers: {},
  comfyui: null,
  created_at: at(0),
  updated_at: at(0),
  ...over
})

export const managedRunner = (over: Partial<ManagedRunner> = {}): ManagedRunner => ({
  id: uuid() as ManagedRunnerId,
  name: "managed",
  runner_type: "pro",
  status: "active",
  endpoint: "http://127.0.0.1:8188",
  headers: {},
  tags: [],
  comfyui: null,
  created_at: at(0),
  updated_at: at(0),
  ...over
})

export const token = (userId: string, over: Partial<ApiToken> = {}): ApiToken => ({
  id: uuid() as TokenId,
  user_id: userId as UserId,
  name: "token",
  token_hash: uuid().replace(/-/g, "") + uuid().replace(/-/g, ""),
  expires_at: null,
  last_used_at: null,
  created_at: at(0),
  ...over
})

/** `items` in a deterministic but scrambled order. */
export const shuffled = <A>(items: ReadonlyArray<A>): Array<A> => {
  const out = items.slice()
  for (let i = out.length - 1; i > 0; i--) {
    const j = (i * 7919 + 13) % (i + 1)
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}
