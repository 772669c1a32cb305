/** Reading JSON request bodies (bounded); the use cases validate their shape. */
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpIncomingMessage from "@effect/platform/HttpIncomingMessage"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { badRequest } from "./ApiErrors.js"

export const MAX_JSON_BYTES = 1024 * 1024

/** The parsed JSON body; 400 when it is not JSON or exceeds 1 MB. */
export const jsonBody = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    if (Number(request.headers["content-length"] ?? "0") > MAX_JSON_BYTES) {
      return yield* Effect.fail(badRequest("body: must be at most 1 MB of JSON", [{ field: "body", message: "must be at most 1 MB" }]))
    }
    const text = yield* request.text.pipe(
      HttpIncomingMessage.withMaxBodySize(Option.some(MAX_JSON_BYTES)),
      Effect.mapError(() => badRequest("body: could not be read (at most 1 MB of JSON)", [{ field: "body", message: "could not be read" }]))
    )
    if (text.trim() === "") return yield* Effect.fail(badRequest("body: is required (a JSON object)", [{ field: "body", message: "is required" }]))
    return yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: () => badRequest("body: is not valid JSON", [{ field: "body", message: "is not valid JSON" }])
    })
  })
