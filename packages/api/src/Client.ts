/**
 * The typed client of the API: every operation of `WesApi` as a method (`client.workflows.get({
 * params: { id } })`), its request encoded and its answer decoded by the declaration, every
 * declared error a typed failure (`NotFoundError`, `BadRequestError`, ...).
 */
import * as HttpApiClient from "effect/http-api/HttpApiClient"
import * as HttpClient from "effect/http/HttpClient"
import * as HttpClientRequest from "effect/http/HttpClientRequest"
import type * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import { WesApi } from "./Api.js"

/** The client of the whole API. */
export type WesClient = HttpApiClient.ForApi<typeof WesApi>

export interface ClientOptions {
  /** Where the API is (`http://localhost:8080`); none: requests go to their path (a page of the same origin). */
  readonly baseUrl?: string | URL | undefined
  /** The bearer token sent with every request (an API token, or the operator's for /admin/v1); none: anonymous. */
  readonly token?: string | Redacted.Redacted<string> | undefined
}

/** A client of `WesApi`, over the `HttpClient` of the context (FetchHttpClient in a browser, undici's in node). */
export const makeClient = (options: ClientOptions = {}): Effect.Effect<WesClient, never, HttpClient.HttpClient> => {
  const token = options.token
  return HttpApiClient.make(WesApi, {
    baseUrl: options.baseUrl,
    transformClient: token === undefined ? undefined : HttpClient.mapRequest(HttpClientRequest.bearerToken(token))
  })
}
