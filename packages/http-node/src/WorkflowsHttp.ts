/** /v1/workflow: create, describe parameters, list, get, rerun, cancel, subscribe (SSE) and outputs. */
import { group } from "./edge/ApiGroups.js"
import * as HttpServerResponse from "effect/unstable/http/HttpServerResponse"
import { toDetail, WebhookService, WorkflowService } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { CurrentUser, WesApi } from "@wes/api"
import { paramsOf } from "@wes/api"
import { SseHub } from "./SseHub.js"
import { workflowWebhookUrlCheck } from "./WebhooksHttp.js"

const contentDisposition = (filename: string) => `attachment; filename="${filename.replace(/[^\x20-\x7e]|["\\]/g, "_")}"`

export const workflowsHttp = group(WesApi, "workflows", (handlers) =>
  Effect.gen(function*() {
    const workflows = yield* WorkflowService
    const hub = yield* SseHub
    const webhooks = yield* WebhookService
    const checkUrl = yield* workflowWebhookUrlCheck
    return handlers
      .handle("create", ({ payload, request }) =>
        Effect.flatMap(CurrentUser, ({ user }) =>
          Effect.andThen(checkUrl(user, payload.webhook_url), workflows.create(user, {
            name: payload.name,
            workflow_json: payload.workflow_json,
            template_id: payload.template_id,
            tags: payload.tags,
            params: paramsOf(payload),
            idempotency_key: request.headers["idempotency-key"],
            priority: payload.priority,
            webhook_url: payload.webhook_url
          }))))
      .handle("parameters", ({ payload }) => Effect.flatMap(CurrentUser, ({ user }) => workflows.describeParameters(user, payload)))
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, ({ user }) =>
          Effect.map(workflows.list(user, urlParams), (page) => ({ workflows: page.items, total: page.total }))))
      .handle("get", ({ path }) => Effect.flatMap(CurrentUser, ({ user }) => Effect.map(workflows.get(user, path.id), toDetail)))
      .handle("rerun", ({ path, payload, request }) =>
        Effect.flatMap(CurrentUser, ({ user }) =>
          Effect.andThen(
            checkUrl(user, payload.webhook_url),
            workflows.rerun(user, path.id, {
              params: paramsOf(payload),
              idempotency_key: request.headers["idempotency-key"],
              webhook_url: payload.webhook_url
            })
          )))
      .handle("cancel", ({ path }) => Effect.flatMap(CurrentUser, ({ user }) => workflows.cancel(user, path.id)))
      .handle("subscribe", ({ headers, path }) =>
        Effect.gen(function*() {
          const { user } = yield* CurrentUser
          const start = yield* workflows.followStart(user, path.id, headers["last-event-id"])
          return hub.response(path.id, start)
        }))
      .handle("outputs", ({ path }) =>
        Effect.flatMap(CurrentUser, ({ user }) => Effect.map(workflows.outputs(user, path.id), (outputs) => ({ outputs }))))
      .handle("deliveries", ({ path }) =>
        Effect.flatMap(CurrentUser, ({ user }) => Effect.map(webhooks.deliveries(user, path.id), (deliveries) => ({ deliveries }))))
      .handle("retryDelivery", ({ path }) => Effect.flatMap(CurrentUser, ({ user }) => webhooks.retry(user, path.id, path.delivery_id)))
      .handle("output", ({ path }) =>
        Effect.gen(function*() {
          const { user } = yield* CurrentUser
          const { blob, output } = yield* workflows.openOutput(user, path.id, path.output_id)
          return HttpServerResponse.stream(
            blob.stream.pipe(Stream.tapError((e) => Effect.logError("output stream failed", { output_id: output.id, error: e.message }))),
            {
              contentType: blob.content_type,
              contentLength: blob.size,
              headers: { "content-disposition": contentDisposition(output.filename), "x-content-type-options": "nosniff" }
            }
          )
        }))
  }))
