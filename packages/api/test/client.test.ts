/**
 * `makeClient`: requests built from the declaration (base URL, path, query, bearer token) and
 * answers decoded by it, declared errors as typed failures; over a recording HttpClient.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as HttpClient from "effect/http/HttpClient"
import type * as HttpClientRequest from "effect/http/HttpClientRequest"
import * as HttpClientResponse from "effect/http/HttpClientResponse"
import * as Layer from "effect/Layer"
import { BadRequestError, makeClient, NotFoundError } from "../src/index.js"

interface Sent {
  readonly method: string
  readonly url: string
  readonly authorization: string | undefined
}

/** An HttpClient answering `answer(url)` and recording what was sent. */
const recording = (answer: (url: URL) => Response) => {
  const sent: Array<Sent> = []
  const layer = Layer.succeed(
    HttpClient.HttpClient,
    HttpClient.make((request: HttpClientRequest.HttpClientRequest, url) =>
      Effect.sync(() => {
        sent.push({ method: request.method, url: url.toString(), authorization: request.headers["authorization"] })
        return HttpClientResponse.fromWeb(request, answer(url))
      })
    )
  )
  return { sent, layer }
}

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } })

describe("makeClient", () => {
  it.effect("sends each request to the base URL with the bearer token, and decodes the answer", () => {
    const server = recording(() => json(200, { status: "ok" }))
    return Effect.gen(function*() {
      const client = yield* makeClient({ baseUrl: "http://wes.test:8080", token: "wes_token" })
      expect(yield* client.system.healthz()).toEqual({ status: "ok" })
      expect(server.sent).toEqual([{ method: "GET", url: "http://wes.test:8080/healthz", authorization: "Bearer wes_token" }])
    }).pipe(Effect.provide(server.layer))
  })

  it.effect("encodes path and query parameters as the declaration says", () => {
    const server = recording((url) => (url.pathname === "/v1/template" ? json(200, { templates: [], total: 0 }) : new Response(null, { status: 204 })))
    return Effect.gen(function*() {
      const client = yield* makeClient({ baseUrl: "http://wes.test", token: "wes_token" })
      expect(yield* client.templates.list({ query: { page: 2, per_page: 5 } })).toEqual({ templates: [], total: 0 })
      yield* client.templates.delete({ params: { id: "018f0000-0000-7000-8000-000000000000" } })
      expect(server.sent.map((s) => `${s.method} ${s.url}`)).toEqual([
        "GET http://wes.test/v1/template?page=2&per_page=5",
        "DELETE http://wes.test/v1/template/018f0000-0000-7000-8000-000000000000"
      ])
    }).pipe(Effect.provide(server.layer))
  })

  it.effect("fails with the declared error of the status, carrying the server's body", () => {
    const server = recording((url) =>
      url.pathname.endsWith("/cancel")
        ? json(404, { status: 404, message: "Workflow not found" })
        : json(400, { status: 400, message: "page: must be an integer of at least 1", details: [{ field: "page", message: "must be an integer of at least 1" }] })
    )
    return Effect.gen(function*() {
      const client = yield* makeClient({ baseUrl: "http://wes.test", token: "wes_token" })
      const missing = yield* Effect.flip(client.workflows.cancel({ params: { id: "018f0000-0000-7000-8000-000000000000" } }))
      expect(missing).toBeInstanceOf(NotFoundError)
      expect(missing).toMatchObject({ status: 404, message: "Workflow not found" })
      const refused = yield* Effect.flip(client.managedRunners.list({ query: {} }))
      expect(refused).toBeInstanceOf(BadRequestError)
      expect(refused).toMatchObject({ status: 400, details: [{ field: "page", message: "must be an integer of at least 1" }] })
    }).pipe(Effect.provide(server.layer))
  })

  it.effect("sends no Authorization header without a token", () => {
    const server = recording(() => json(200, { status: "ok" }))
    return Effect.gen(function*() {
      const client = yield* makeClient({ baseUrl: "http://wes.test" })
      yield* client.system.readyz()
      expect(server.sent).toEqual([{ method: "GET", url: "http://wes.test/readyz", authorization: undefined }])
    }).pipe(Effect.provide(server.layer))
  })
})
