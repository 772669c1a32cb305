/** /admin/v1: the operator's users, tokens and managed runners (behind WES_ADMIN_TOKEN). */
import { group } from "./edge/ApiGroups.js"
import { AccountService, IssueTokenRequest, ManagedRunnerService } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { WesApi } from "@wes/api"

/** `issueToken` takes the body as sent (it decodes it itself): the decoded timestamp goes back to its text. */
const tokenRequestAsSent = Schema.encodeEffect(IssueTokenRequest)

export const adminHttp = group(WesApi, "admin", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* AccountService
    const managed = yield* ManagedRunnerService
    return handlers
      .handle("createUser", ({ payload }) => accounts.createUser(payload))
      .handle("listUsers", ({ urlParams }) =>
        Effect.map(accounts.listUsers(urlParams), (page) => ({ users: page.items, total: page.total })))
      .handle("getUser", ({ path }) => accounts.userDetail(path.id))
      .handle("updateUser", ({ path, payload }) => accounts.updateUser(path.id, payload))
      .handle("issueToken", ({ path, payload }) =>
        Effect.flatMap(Effect.orDie(tokenRequestAsSent(payload)), (body) => accounts.issueToken(path.id, body)))
      .handle("listTokens", ({ path }) => accounts.listTokens(path.id))
      .handle("revokeToken", ({ path }) => accounts.revokeToken(path.id))
      .handle("createManagedRunner", ({ payload }) => managed.adminCreate(payload))
      .handle("listManagedRunners", ({ urlParams }) =>
        Effect.map(managed.adminList(urlParams), (page) => ({ runners: page.items, total: page.total })))
      .handle("getManagedRunner", ({ path }) => managed.adminGet(path.id))
      .handle("updateManagedRunner", ({ path, payload }) => managed.adminUpdate(path.id, payload))
      .handle("deleteManagedRunner", ({ path }) => managed.adminDelete(path.id))
  }))
