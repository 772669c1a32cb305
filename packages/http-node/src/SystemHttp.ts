/** /healthz (the process answers) and /readyz (the store answers and no shutdown is under way). */
import { AccountRepository } from "@wes/core"
import * as Effect from "effect/Effect"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import { unavailable, WesApi } from "@wes/api"
import { seeing } from "./Handlers.js"
import { Shutdown } from "./Shutdown.js"

const NIL_UUID = "00000000-0000-0000-0000-000000000000"

export const systemHttp = HttpApiBuilder.group(WesApi, "system", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* AccountRepository
    const shutdown = yield* Shutdown
    return handlers
      .handle("healthz", () => Effect.succeed({ status: "ok" as const }))
      .handle("readyz", () =>
        Effect.gen(function*() {
          if (yield* shutdown.isShuttingDown) return yield* Effect.fail(unavailable("Shutting down"))
          yield* accounts.findUser(NIL_UUID).pipe(Effect.timeoutOrElse({
            duration: "2 seconds",
            orElse: () => Effect.fail(unavailable())
          }))
          return { status: "ok" as const }
        }))
  })).pipe(seeing(AccountRepository, Shutdown))
