/**
 * A direct runner needs an endpoint; an agent runner does not (issue 34). The schema cannot say
 * "required unless `connection` is agent" field by field, so it declares `endpoint` optional and
 * create-runner checks it once the body has decoded: "endpoint: is required", as the schema said
 * before agent runners. (A body with other problems lists those first; this one comes after.)
 */
import * as Effect from "effect/Effect"
import { ValidationError } from "../domain/Errors.js"

/** `decode`, then the endpoint required of a runner that is not an agent runner. */
export const decodeCreateRunner = <A extends { readonly endpoint?: string | undefined; readonly connection?: string | undefined }, R>(
  decode: (body: unknown) => Effect.Effect<A, ValidationError, R>
) =>
(body: unknown): Effect.Effect<A, ValidationError, R> =>
  Effect.filterOrFail(
    decode(body),
    (req) => req.endpoint !== undefined || req.connection === "agent",
    () => ValidationError.field("endpoint", "is required")
  )
