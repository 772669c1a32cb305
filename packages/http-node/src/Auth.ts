/** The two bearer-token middlewares: users (/v1) and the operator (/admin/v1). */
import * as HttpServerRequest from "effect/unstable/http/HttpServerRequest"
import { AccountService, bearerToken } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { notFound, UnauthorizedError } from "@wes/api"
import { AdminAuthentication, Authentication } from "@wes/api"
import { NodeRequest } from "./NodeRequest.js"

/** Reads the raw header: the contract tells a missing header from an invalid token. */
const authorizationHeader = Effect.map(
  Effect.serviceOption(HttpServerRequest.HttpServerRequest),
  Option.flatMap((r) => Option.fromNullable(r.headers.authorization))
)

export const AuthenticationLive: Layer.Layer<Authentication, never, AccountService> = Layer.effect(
  Authentication,
  Effect.map(AccountService, (accounts) =>
    Authentication.of({
      // The raw header: the contract tells a missing header from an invalid token.
      bearer: () =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
          Effect.map(accounts.authenticate(request.headers.authorization), (principal) => {
            // The request log names the caller.
            if (request instanceof NodeRequest && request.record !== undefined) request.record.userId = principal.user.id
            return principal
          }))
    }))
)

/** Constant-time comparison of two strings. */
const sameSecret = (a: string, b: string): boolean => {
  let diff = a.length ^ b.length
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) || 0) ^ (b.charCodeAt(i) || 0)
  return diff === 0
}

/** Without an admin token configured, every /admin/v1 path answers 404 as if it did not exist. */
export const adminAuthenticationLayer = (adminToken: Option.Option<Redacted.Redacted<string>>): Layer.Layer<AdminAuthentication> =>
  Layer.succeed(
    AdminAuthentication,
    AdminAuthentication.of({
      adminBearer: () =>
        Option.match(adminToken, {
          onNone: () => Effect.fail(notFound()),
          onSome: (expected) =>
            Effect.flatMap(authorizationHeader, (header) => {
              if (Option.isNone(header) || header.value.trim() === "") {
                return Effect.fail(new UnauthorizedError({ status: 401, message: "Missing authorization header" }))
              }
              const token = bearerToken(header.value)
              return token !== undefined && sameSecret(token, Redacted.value(expected))
                ? Effect.void
                : Effect.fail(new UnauthorizedError({ status: 401, message: "Invalid token" }))
            })
        })
    })
  )
