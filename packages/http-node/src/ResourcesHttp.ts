/** /v1/user, /v1/template, /v1/runner and /v1/managed-runner. */
import { group } from "./edge/ApiGroups.js"
import { AccountService, ManagedRunnerService, RunnerService, TemplateService } from "@wes/core"
import * as Effect from "effect/Effect"
import { CurrentUser, WesApi } from "@wes/api"

export const userHttp = group(WesApi, "user", (handlers) =>
  Effect.map(AccountService, (accounts) =>
    handlers.handle("get", () => Effect.flatMap(CurrentUser, ({ user }) => accounts.currentUser(user)))))

export const templatesHttp = group(WesApi, "templates", (handlers) =>
  Effect.map(TemplateService, (templates) =>
    handlers
      .handle("create", ({ payload }) => Effect.flatMap(CurrentUser, ({ user }) => templates.create(user, payload)))
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, ({ user }) =>
          Effect.map(templates.list(user, urlParams), (page) => ({ templates: page.items, total: page.total }))))
      .handle("get", ({ path }) => Effect.flatMap(CurrentUser, ({ user }) => templates.get(user, path.id)))
      .handle("update", ({ path, payload }) => Effect.flatMap(CurrentUser, ({ user }) => templates.update(user, path.id, payload)))
      .handle("delete", ({ path }) => Effect.flatMap(CurrentUser, ({ user }) => templates.delete(user, path.id)))))

export const runnersHttp = group(WesApi, "runners", (handlers) =>
  Effect.map(RunnerService, (runners) =>
    handlers
      .handle("create", ({ payload }) => Effect.flatMap(CurrentUser, ({ user }) => runners.create(user, payload)))
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, ({ user }) =>
          Effect.map(runners.list(user, urlParams), (page) => ({ runners: page.items, total: page.total }))))
      .handle("get", ({ path }) => Effect.flatMap(CurrentUser, ({ user }) => runners.get(user, path.id)))
      .handle("update", ({ path, payload }) => Effect.flatMap(CurrentUser, ({ user }) => runners.update(user, path.id, payload)))
      .handle("replace", ({ path, payload }) => Effect.flatMap(CurrentUser, ({ user }) => runners.update(user, path.id, payload)))
      .handle("delete", ({ path }) => Effect.flatMap(CurrentUser, ({ user }) => runners.delete(user, path.id)))
      .handle("history", ({ path }) => Effect.flatMap(CurrentUser, ({ user }) => runners.history(user, path.id)))))

export const managedRunnersHttp = group(WesApi, "managedRunners", (handlers) =>
  Effect.map(ManagedRunnerService, (managed) =>
    handlers
      .handle("list", ({ urlParams }) =>
        Effect.flatMap(CurrentUser, ({ user }) =>
          Effect.map(managed.list(user, urlParams), (page) => ({ runners: page.items, total: page.total }))))
      .handle("history", ({ path }) => Effect.flatMap(CurrentUser, ({ user }) => managed.history(user, path.id)))))
