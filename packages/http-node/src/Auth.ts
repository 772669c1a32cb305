/** The two bearer-token middlewares: users (/v1) and the operator (/admin/v1). */
import { AccountService, bearerToken } from "@wes/core"
import * as Effect from "effect/Effect"
import { HttpServerRequest } from "effect/http/HttpServerRequest"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { AdminAuthentication, Authentication, CurrentUser, notFound, UnauthorizedError } from "@wes/api"
import { recordUser } from "./AccessLog.js"

export const AuthenticationLive: Layer.Layer<Authentication, never, AccountService> = Layer.effect(
  Authentication,
  Effect.map(AccountService, (accounts) =>
    Authentication.of({
      // The raw header, not HttpApi's credential: the contract tells a missing header from an invalid token.
      bearer: (httpEffect) =>
        Effect.flatMap(HttpServerRequest, (request) =>
          Effect.flatMap(accounts.authenticate(request.headers.authorization), (principal) =>
            Effect.andThen(recordUser(principal.user.id), Effect.provideService(httpEffect, CurrentUser, principal))))
    }))
)

/** Constant-time comparison of two strings. */
const sameSecret = (a: string, b: string): boolean => {
  let diff = a.length ^ b.length
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) || 0) ^ (b.charCodeAt(i) || 0)
  return diff === 0
}

const missing = new UnauthorizedError({ status: 401, message: "Missing authorization header" })
const invalid = new UnauthorizedError({ status: 401, message: "Invalid token" })

/** Without an admin token configured, every /admin/v1 path answers 404 as if it did not exist. */
export const adminAuthenticationLayer = (adminToken: Option.Option<Redacted.Redacted<string>>): Layer.Layer<AdminAuthentication> =>
  Layer.succeed(
    AdminAuthentication,
    AdminAuthentication.of({
      adminBearer: (httpEffect) =>
        Option.match(adminToken, {
          onNone: () => Effect.fail(notFound()),
          onSome: (expected) =>
            Effect.andThen(
              Effect.flatMap(HttpServerRequest, (request) => {
                const header = request.headers.authorization
                if (header === undefined || header.trim() === "") return Effect.fail(missing)
                const token = bearerToken(header)
                return token !== undefined && sameSecret(token, Redacted.value(expected)) ? Effect.void : Effect.fail(invalid)
              }),
              httpEffect
            )
        })
    })
  )
