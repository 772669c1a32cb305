/** /v1/user, /v1/template, /v1/runner (with its agent tokens) and /v1/managed-runner. */
import { AccountService, AgentTokenService, ManagedRunnerService, RunnerService, TemplateService } from "@wes/core"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { Authentication, CurrentUser, WesApi } from "@wes/api"
import { seeing } from "./Handlers.js"
import { MultipartReader } from "./MultipartReader.js"
import { payloadReader, withPayload } from "./RequestBodies.js"

export const userHttp = HttpApiBuilder.group(WesApi, "user", (handlers) =>
  Effect.map(AccountService, (accounts) =>
    handlers.handle("get", () => Effect.flatMap(CurrentUser, ({ user }) => accounts.currentUser(user))))).pipe(
    seeing(AccountService, Authentication)
  )

export const templatesHttp = HttpApiBuilder.group(WesApi, "templates", (handlers) =>
  Effect.gen(function*() {
    const templates = yield* TemplateService
    const withBody = withPayload(yield* payloadReader)
    return handlers
      .handleRaw("create", withBody(({ payload }) => Effect.flatMap(CurrentUser, ({ user }) => templates.create(user, payload))))
      .handle("list", ({ query }) =>
        Effect.flatMap(CurrentUser, ({ user }) =>
          Effect.map(templates.list(user, query), (page) => ({ templates: page.items, total: page.total }))))
      .handle("get", ({ params }) => Effect.flatMap(CurrentUser, ({ user }) => templates.get(user, params.id)))
      .handleRaw("update", withBody(({ params, payload }) => Effect.flatMap(CurrentUser, ({ user }) => templates.update(user, params.id, payload))))
      .handle("delete", ({ params }) => Effect.flatMap(CurrentUser, ({ user }) => templates.delete(user, params.id)))
  })).pipe(seeing(TemplateService, MultipartReader, Authentication))

export const runnersHttp = HttpApiBuilder.group(WesApi, "runners", (handlers) =>
  Effect.gen(function*() {
    const runners = yield* RunnerService
    const agentTokens = yield* AgentTokenService
    const withBody = withPayload(yield* payloadReader)
    return handlers
      .handleRaw("create", withBody(({ payload }) => Effect.flatMap(CurrentUser, ({ user }) => runners.create(user, payload))))
      .handle("list", ({ query }) =>
        Effect.flatMap(CurrentUser, ({ user }) => Effect.map(runners.list(user, query), (page) => ({ runners: page.items, total: page.total }))))
      .handle("get", ({ params }) => Effect.flatMap(CurrentUser, ({ user }) => runners.get(user, params.id)))
      .handleRaw("update", withBody(({ params, payload }) => Effect.flatMap(CurrentUser, ({ user }) => runners.update(user, params.id, payload))))
      .handleRaw("replace", withBody(({ params, payload }) => Effect.flatMap(CurrentUser, ({ user }) => runners.update(user, params.id, payload))))
      .handle("delete", ({ params }) => Effect.flatMap(CurrentUser, ({ user }) => runners.delete(user, params.id)))
      .handle("history", ({ params }) => Effect.flatMap(CurrentUser, ({ user }) => runners.history(user, params.id)))
      .handle("createAgentToken", ({ params }) => Effect.flatMap(CurrentUser, ({ user }) => agentTokens.create(user, params.id)))
      .handle("listAgentTokens", ({ params }) => Effect.flatMap(CurrentUser, ({ user }) => agentTokens.list(user, params.id)))
      .handle("revokeAgentToken", ({ params }) =>
        Effect.flatMap(CurrentUser, ({ user }) => agentTokens.revoke(user, params.id, params.token_id)))
  })).pipe(seeing(RunnerService, AgentTokenService, MultipartReader, Authentication))

export const managedRunnersHttp = HttpApiBuilder.group(WesApi, "managedRunners", (handlers) =>
  Effect.map(ManagedRunnerService, (managed) =>
    handlers
      .handle("list", ({ query }) =>
        Effect.flatMap(CurrentUser, ({ user }) => Effect.map(managed.list(user, query), (page) => ({ runners: page.items, total: page.total }))))
      .handle("history", ({ params }) => Effect.flatMap(CurrentUser, ({ user }) => managed.history(user, params.id))))).pipe(
    seeing(ManagedRunnerService, Authentication)
  )
