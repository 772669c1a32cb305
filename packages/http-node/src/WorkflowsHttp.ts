/** /v1/workflow: create, describe parameters, list, get, rerun, cancel, subscribe (SSE), outputs (one, or all as a ZIP). */
import { toDetail, WebhookService, WorkflowService } from "@wes/core"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Authentication, CurrentUser, paramsOf, WesApi } from "@wes/api"
import { seeing } from "./Handlers.js"
import { MultipartReader } from "./MultipartReader.js"
import { nodeResponseOf } from "./NodeMessages.js"
import { archiveResponse, OutputDelivery, outputResponse } from "./OutputResponses.js"
import { payloadReader, withPayload } from "./RequestBodies.js"
import { SseHub } from "./SseHub.js"
import { WebhookUrlCheck, workflowWebhookUrlCheck } from "./WebhooksHttp.js"

export const workflowsHttp = HttpApiBuilder.group(WesApi, "workflows", (handlers) =>
  Effect.gen(function*() {
    const workflows = yield* WorkflowService
    const hub = yield* SseHub
    const webhooks = yield* WebhookService
    const checkUrl = yield* workflowWebhookUrlCheck
    const withBody = withPayload(yield* payloadReader)
    const delivery = yield* OutputDelivery
    return handlers
      .handleRaw("create", withBody(({ payload, request }) =>
        Effect.flatMap(CurrentUser, ({ user }) =>
          Effect.andThen(checkUrl(user, payload.webhook_url), workflows.create(user, {
            name: payload.name,
            workflow_json: payload.workflow_json,
            template_id: payload.template_id,
            tags: payload.tags,
            params: paramsOf(payload),
            idempotency_key: request.headers["idempotency-key"],
            priority: payload.priority,
            webhook_url: payload.webhook_url,
            models: payload.models
          })))))
      .handleRaw("parameters", withBody(({ payload }) => Effect.flatMap(CurrentUser, ({ user }) => workflows.describeParameters(user, payload))))
      .handle("list", ({ query }) =>
        Effect.flatMap(CurrentUser, ({ user }) => Effect.map(workflows.list(user, query), (page) => ({ workflows: page.items, total: page.total }))))
      .handle("get", ({ params }) => Effect.flatMap(CurrentUser, ({ user }) => Effect.map(workflows.get(user, params.id), toDetail)))
      .handleRaw("rerun", withBody(({ params, payload, request }) =>
        Effect.flatMap(CurrentUser, ({ user }) =>
          Effect.andThen(
            checkUrl(user, payload.webhook_url),
            workflows.rerun(user, params.id, {
              params: paramsOf(payload),
              idempotency_key: request.headers["idempotency-key"],
              webhook_url: payload.webhook_url
            })
          ))))
      .handle("cancel", ({ params }) => Effect.flatMap(CurrentUser, ({ user }) => workflows.cancel(user, params.id)))
      .handle("subscribe", ({ headers, params, query }) =>
        Effect.gen(function*() {
          const { user } = yield* CurrentUser
          const start = yield* workflows.followStart(user, params.id, headers["last-event-id"])
          return hub.response(params.id, start, query.previews === true)
        }))
      .handle("outputs", ({ params }) =>
        Effect.flatMap(CurrentUser, ({ user }) => Effect.map(workflows.outputs(user, params.id), (outputs) => ({ outputs }))))
      .handle("deliveries", ({ params }) =>
        Effect.flatMap(CurrentUser, ({ user }) => Effect.map(webhooks.deliveries(user, params.id), (deliveries) => ({ deliveries }))))
      .handle("retryDelivery", ({ params }) => Effect.flatMap(CurrentUser, ({ user }) => webhooks.retry(user, params.id, params.delivery_id)))
      .handle("output", ({ headers, params, request }) =>
        Effect.gen(function*() {
          const { user } = yield* CurrentUser
          const stored = yield* workflows.findOutput(user, params.id, params.output_id)
          // Node's response: a blob in a local file is sent from the file (FileDownload.ts).
          return yield* outputResponse(stored, headers, delivery, nodeResponseOf(request))
        }))
      .handle("outputsZip", ({ params }) =>
        Effect.flatMap(CurrentUser, ({ user }) => Effect.map(workflows.outputArchive(user, params.id), archiveResponse)))
  })).pipe(seeing(WorkflowService, OutputDelivery, SseHub, WebhookService, WebhookUrlCheck, MultipartReader, Authentication))
