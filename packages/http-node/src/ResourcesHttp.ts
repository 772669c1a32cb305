/** /v1/user, /v1/template, /v1/runner and /v1/managed-runner. */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { AccountService, ManagedRunnerService, RunnerService, TemplateService } from "@wes/core"
import * as Effect from "effect/Effect"
import { toHttpError } from "./ApiErrors.js"
import { CurrentUser, WesApi } from "./Api.js"
import { readForm } from "./Form.js"
import { templateInput } from "./FormInput.js"
import { jsonBody } from "./JsonBody.js"

export const userHttp = HttpApiBuilder.group(WesApi, "user", (handlers) =>
  Effect.map(AccountService, (accounts) =>
    handlers.handle("get", () =>
      Effect.flatMap(CurrentUser, ({ user }) => accounts.currentUser(user).pipe(Effect.mapError(toHttpError))))))

export const templatesHttp = HttpApiBuilder.group(WesApi, "templates", (handlers) =>
  Effect.map(TemplateService, (templates) =>
    handlers
      .handleRaw("create", ({ request }) =>
        Effect.gen(function*() {
          const { user } = yield* CurrentUser
          const input = yield* templateInput(yield* readForm(request))
          return yield* templates.create(user, input).pipe(Effect.mapError(toHttpError))
        }).pipe(Effect.scoped))
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, ({ user }) =>
          templates.list(user, urlParams).pipe(
            Effect.map((page) => ({ templates: page.items, total: page.total })),
            Effect.mapError(toHttpError)
          )))
      .handle("get", ({ path }) => Effect.flatMap(CurrentUser, ({ user }) => templates.get(user, path.id).pipe(Effect.mapError(toHttpError))))
      .handleRaw("update", ({ path, request }) =>
        Effect.gen(function*() {
          const { user } = yield* CurrentUser
          const input = yield* templateInput(yield* readForm(request))
          return yield* templates.update(user, path.id, input).pipe(Effect.mapError(toHttpError))
        }).pipe(Effect.scoped))
      .handle("delete", ({ path }) =>
        Effect.flatMap(CurrentUser, ({ user }) => templates.delete(user, path.id).pipe(Effect.mapError(toHttpError))))))

export const runnersHttp = HttpApiBuilder.group(WesApi, "runners", (handlers) =>
  Effect.map(RunnerService, (runners) => {
    const update = ({ path, request }: { readonly path: { readonly id: string }; readonly request: Parameters<typeof jsonBody>[0] }) =>
      Effect.gen(function*() {
        const { user } = yield* CurrentUser
        return yield* runners.update(user, path.id, yield* jsonBody(request)).pipe(Effect.mapError(toHttpError))
      })
    return handlers
      .handleRaw("create", ({ request }) =>
        Effect.gen(function*() {
          const { user } = yield* CurrentUser
          return yield* runners.create(user, yield* jsonBody(request)).pipe(Effect.mapError(toHttpError))
        }))
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, ({ user }) =>
          runners.list(user, urlParams).pipe(
            Effect.map((page) => ({ runners: page.items, total: page.total })),
            Effect.mapError(toHttpError)
          )))
      .handle("get", ({ path }) => Effect.flatMap(CurrentUser, ({ user }) => runners.get(user, path.id).pipe(Effect.mapError(toHttpError))))
      .handleRaw("update", update)
      .handleRaw("replace", update)
      .handle("delete", ({ path }) => Effect.flatMap(CurrentUser, ({ user }) => runners.delete(user, path.id).pipe(Effect.mapError(toHttpError))))
      .handle("history", ({ path }) =>
        Effect.flatMap(CurrentUser, ({ user }) => runners.history(user, path.id).pipe(Effect.mapError(toHttpError))))
  }))

export const managedRunnersHttp = HttpApiBuilder.group(WesApi, "managedRunners", (handlers) =>
  Effect.map(ManagedRunnerService, (managed) =>
    handlers
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, ({ user }) =>
          managed.list(user, urlParams).pipe(
            Effect.map((page) => ({ runners: page.items, total: page.total })),
            Effect.mapError(toHttpError)
          )))
      .handle("history", ({ path }) =>
        Effect.flatMap(CurrentUser, ({ user }) => managed.history(user, path.id).pipe(Effect.mapError(toHttpError))))))
