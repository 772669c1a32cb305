/** /admin/v1: the operator's users, tokens and managed runners (behind WES_ADMIN_TOKEN). */
import * as HttpApiBuilder from "@effect/platform/HttpApiBuilder"
import { AccountService, ManagedRunnerService } from "@wes/core"
import * as Effect from "effect/Effect"
import { toHttpError } from "./ApiErrors.js"
import { WesApi } from "./Api.js"
import { jsonBody } from "./JsonBody.js"

export const adminHttp = HttpApiBuilder.group(WesApi, "admin", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* AccountService
    const managed = yield* ManagedRunnerService
    return handlers
      .handleRaw("createUser", ({ request }) => Effect.flatMap(jsonBody(request), (body) => accounts.createUser(body).pipe(Effect.mapError(toHttpError))))
      .handle("getUser", ({ path }) => accounts.getUser(path.id).pipe(Effect.mapError(toHttpError)))
      .handleRaw("updateUser", ({ path, request }) =>
        Effect.flatMap(jsonBody(request), (body) => accounts.updateUser(path.id, body).pipe(Effect.mapError(toHttpError))))
      .handleRaw("issueToken", ({ path, request }) =>
        Effect.flatMap(jsonBody(request), (body) => accounts.issueToken(path.id, body).pipe(Effect.mapError(toHttpError))))
      .handle("listTokens", ({ path }) => accounts.listTokens(path.id).pipe(Effect.mapError(toHttpError)))
      .handle("revokeToken", ({ path }) => accounts.revokeToken(path.id).pipe(Effect.mapError(toHttpError)))
      .handleRaw("createManagedRunner", ({ request }) =>
        Effect.flatMap(jsonBody(request), (body) => managed.adminCreate(body).pipe(Effect.mapError(toHttpError))))
      .handle("listManagedRunners", ({ urlParams }) =>
        managed.adminList(urlParams).pipe(Effect.map((p) => ({ runners: p.items, total: p.total })), Effect.mapError(toHttpError)))
      .handle("getManagedRunner", ({ path }) => managed.adminGet(path.id).pipe(Effect.mapError(toHttpError)))
      .handleRaw("updateManagedRunner", ({ path, request }) =>
        Effect.flatMap(jsonBody(request), (body) => managed.adminUpdate(path.id, body).pipe(Effect.mapError(toHttpError))))
      .handle("deleteManagedRunner", ({ path }) => managed.adminDelete(path.id).pipe(Effect.mapError(toHttpError)))
  }))
