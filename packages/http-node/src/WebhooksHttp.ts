/**
 * /v1/webhook (the caller's endpoint and its secret) and the address check every webhook URL
 * passes before it is stored: the runners' policy (private, loopback, link-local and unspecified
 * addresses refused unless allowed), answered with a 400 naming the field.
 */
import { checkWebhookUrl, type StorageError, type User, ValidationError, WebhookService } from "@wes/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as Layer from "effect/Layer"
import { Authentication, CurrentUser, WesApi } from "@wes/api"
import { seeing } from "./Handlers.js"
import { MultipartReader } from "./MultipartReader.js"
import { payloadReader, withPayload } from "./RequestBodies.js"
import { type Resolver, systemResolver } from "./RunnerAddressPolicy.js"
import { webhookRefusal } from "./WebhookSenderNode.js"

/** Checks a webhook URL for the server's address policy; the URL (normalized) or a 400. */
export class WebhookUrlCheck extends Context.Service<
  WebhookUrlCheck,
  (field: string, url: string) => Effect.Effect<string, ValidationError>
>()("@wes/http-node/WebhookUrlCheck") {}

export const webhookUrlCheckLayer = (options: { readonly denyPrivate: boolean; readonly resolve?: Resolver | undefined }) =>
  Layer.succeed(WebhookUrlCheck, (field, url) =>
    Effect.flatMap(checkWebhookUrl(field, url), (href) =>
      options.denyPrivate
        ? Effect.flatMap(Effect.promise(() => webhookRefusal(href, options.resolve ?? systemResolver)), (reason) =>
          reason === undefined ? Effect.succeed(href) : Effect.fail(ValidationError.field(field, reason)))
        : Effect.succeed(href)))

/**
 * The check of a workflow's own `webhook_url`: allowed by the policy, and signed with the caller's
 * secret, so that must exist. Its services are taken once, so a create provides none per request.
 */
export const workflowWebhookUrlCheck = Effect.gen(function*() {
  const check = yield* WebhookUrlCheck
  const webhooks = yield* WebhookService
  return (user: User, url: string | undefined): Effect.Effect<void, ValidationError | StorageError> =>
    url === undefined || url === ""
      ? Effect.void
      : Effect.andThen(
        check("webhook_url", url),
        webhooks.requireEndpoint(user).pipe(Effect.catchTag("WebhookNotFound", () =>
          Effect.fail(ValidationError.field("webhook_url", "webhooks are signed with your webhook secret: set up one first with PUT /v1/webhook"))))
      )
})

export const webhookHttp = HttpApiBuilder.group(WesApi, "webhook", (handlers) =>
  Effect.gen(function*() {
    const webhooks = yield* WebhookService
    const check = yield* WebhookUrlCheck
    const withBody = withPayload(yield* payloadReader)
    return handlers
      .handleRaw("put", withBody(({ payload }) =>
        Effect.flatMap(CurrentUser, ({ user }) => Effect.flatMap(check("url", payload.url), (url) => webhooks.put(user, url)))))
      .handle("get", () => Effect.flatMap(CurrentUser, ({ user }) => webhooks.get(user)))
      .handle("delete", () => Effect.flatMap(CurrentUser, ({ user }) => webhooks.remove(user)))
      .handle("rotate", () => Effect.flatMap(CurrentUser, ({ user }) => webhooks.rotate(user)))
  })).pipe(seeing(WebhookService, WebhookUrlCheck, MultipartReader, Authentication))
