/** /admin/v1: the operator's users, tokens and managed runners (behind WES_ADMIN_TOKEN). */
import { AccountService, IssueTokenRequest, ManagedRunnerService } from "@wes/core"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as Schema from "effect/Schema"
import { AdminAuthentication, WesApi } from "@wes/api"
import { seeing } from "./Handlers.js"
import { MultipartReader } from "./MultipartReader.js"
import { payloadReader, withPayload } from "./RequestBodies.js"

/** `issueToken` takes the body as sent (it decodes it itself): the decoded timestamp goes back to its text. */
const tokenRequestAsSent = Schema.encodeEffect(IssueTokenRequest)

export const adminHttp = HttpApiBuilder.group(WesApi, "admin", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* AccountService
    const managed = yield* ManagedRunnerService
    const withBody = withPayload(yield* payloadReader)
    return handlers
      .handleRaw("createUser", withBody(({ payload }) => accounts.createUser(payload)))
      .handle("listUsers", ({ query }) => Effect.map(accounts.listUsers(query), (page) => ({ users: page.items, total: page.total })))
      .handle("getUser", ({ params }) => accounts.userDetail(params.id))
      .handleRaw("updateUser", withBody(({ params, payload }) => accounts.updateUser(params.id, payload)))
      .handleRaw("issueToken", withBody(({ params, payload }) =>
        Effect.flatMap(Effect.orDie(tokenRequestAsSent(payload)), (body) => accounts.issueToken(params.id, body))))
      .handle("listTokens", ({ params }) => accounts.listTokens(params.id))
      .handle("revokeToken", ({ params }) => accounts.revokeToken(params.id))
      .handleRaw("createManagedRunner", withBody(({ payload }) => managed.adminCreate(payload)))
      .handle("listManagedRunners", ({ query }) => Effect.map(managed.adminList(query), (page) => ({ runners: page.items, total: page.total })))
      .handle("getManagedRunner", ({ params }) => managed.adminGet(params.id))
      .handleRaw("updateManagedRunner", withBody(({ params, payload }) => managed.adminUpdate(params.id, payload)))
      .handle("deleteManagedRunner", ({ params }) => managed.adminDelete(params.id))
  })).pipe(seeing(AccountService, ManagedRunnerService, MultipartReader, AdminAuthentication))
