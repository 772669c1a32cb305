/**
 * The edge (src/Edge.ts) over a declaration, on a small API of its own: routing (path parameters,
 * HEAD, 404, 405 with Allow in declared order), decoding by the declared schemas (a 400 naming each
 * field, an unread body of the wrong Content-Type), answers encoded by the declared success and
 * error schemas, and what a handler gets wrong answered as a 500.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import { TierPolicy, WorkflowNotFound } from "@wes/core"
import * as Effect from "effect/Effect"
import * as HttpServer from "effect/http/HttpServer"
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiBuilder from "effect/http-api/HttpApiBuilder"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import { createServer } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BadRequest, InternalError, NotFoundStatus } from "@wes/api"
import * as Edge from "../src/Edge.js"
import { MultipartReader } from "../src/MultipartReader.js"
import { payloadReader, withPayload } from "../src/RequestBodies.js"

class Item extends Schema.Class<Item>("Item")({ id: Schema.String, n: Schema.Number }) {}
const Id = { id: Schema.String }
const NewItem = Schema.Struct({ n: Schema.Int })
const Positive = Schema.Struct({ n: Schema.Number.check(Schema.isGreaterThan(0)) })
const errors = [BadRequest, NotFoundStatus, InternalError] as const

class Items extends HttpApiGroup.make("items").add(
  HttpApiEndpoint.post("create", "/items", { payload: NewItem, success: Item.pipe(HttpApiSchema.status(201)), error: errors }),
  HttpApiEndpoint.get("list", "/items", { query: { tag: Schema.optional(Schema.Array(Schema.String)) }, success: Schema.Struct({ tags: Schema.Array(Schema.String) }), error: errors }),
  HttpApiEndpoint.get("get", "/items/:id", { params: Id, success: Item, error: errors }),
  HttpApiEndpoint.delete("remove", "/items/:id", { params: Id, success: HttpApiSchema.NoContent, error: errors }),
  HttpApiEndpoint.get("broken", "/broken", { success: Positive, error: errors }),
  HttpApiEndpoint.get("crash", "/crash", { success: Item, error: errors })
) {}
class ToyApi extends HttpApi.make("toy").add(Items) {}

const items = HttpApiBuilder.group(ToyApi, "items", (handlers) =>
  Effect.map(payloadReader, (read) =>
    handlers
      .handleRaw("create", withPayload(read)(({ payload }) => Effect.succeed(new Item({ id: "new", n: payload.n }))))
      .handle("list", ({ query }) => Effect.succeed({ tags: query.tag ?? [] }))
      .handle("get", ({ params }) => (params.id === "missing" ? Effect.fail(new WorkflowNotFound()) : Effect.succeed(new Item({ id: params.id, n: 1 }))))
      .handle("remove", () => Effect.void)
      // An answer its own success schema refuses, and a defect: the server's faults, not the client's.
      .handle("broken", () => Effect.succeed({ n: -1 }))
      .handle("crash", () => Effect.die(new Error("boom")))))

const server = Edge.serve(ToyApi).pipe(
  Layer.provide(items),
  Layer.provide(MultipartReader.layer().pipe(Layer.provide(TierPolicy.Default))),
  Layer.provideMerge(NodeHttpServer.layer(() => createServer(), { port: 0, host: "127.0.0.1", gracefulShutdownTimeout: "1 second" })),
  // Its unexpected-error lines stay out of the test's output.
  Layer.provide(Logger.layer([]))
)

let runtime: ManagedRuntime.ManagedRuntime<HttpServer.HttpServer, unknown>
let base = ""
beforeAll(async () => {
  runtime = ManagedRuntime.make(server)
  const { address } = await runtime.runPromise(HttpServer.HttpServer)
  if (address._tag === "UnixPathAddress") throw new Error("expected a TCP address")
  base = `http://127.0.0.1:${address.port}`
})
afterAll(() => runtime.dispose())

const call = async (method: string, path: string, init: { readonly body?: string; readonly type?: string } = {}) => {
  const res = await fetch(base + path, {
    method,
    ...(init.body === undefined ? {} : { body: init.body, headers: { "content-type": init.type ?? "application/json" } })
  })
  const text = await res.text()
  return { status: res.status, allow: res.headers.get("allow"), type: res.headers.get("content-type"), body: text === "" ? undefined : JSON.parse(text) as unknown }
}

describe("the edge over a declaration", () => {
  it("routes by method and path, decodes path and query, and encodes the declared success", async () => {
    expect(await call("GET", "/items/a1")).toMatchObject({ status: 200, type: "application/json", body: { id: "a1", n: 1 } })
    expect(await call("POST", "/items", { body: JSON.stringify({ n: 3 }) })).toMatchObject({ status: 201, body: { id: "new", n: 3 } })
    expect(await call("DELETE", "/items/a1")).toMatchObject({ status: 204, body: undefined })
    // A parameter sent once where the schema declares an array is one element of it.
    expect((await call("GET", "/items?tag=x")).body).toEqual({ tags: ["x"] })
    expect((await call("GET", "/items?tag=x&tag=y")).body).toEqual({ tags: ["x", "y"] })
    expect((await call("HEAD", "/items/a1")).status).toBe(200)
  })

  it("answers an unknown path 404 and a known path with another method 405, Allow in declared order", async () => {
    expect(await call("GET", "/nothing")).toMatchObject({ status: 404, body: { status: 404, message: "Not found" } })
    expect(await call("PUT", "/items/a1")).toMatchObject({ status: 405, allow: "GET, DELETE", body: { status: 405, message: "Method not allowed: use GET, DELETE" } })
    expect(await call("PATCH", "/items")).toMatchObject({ status: 405, allow: "POST, GET" })
  })

  it("answers a body the declared schema refuses with a 400 naming every field", async () => {
    const refused = await call("POST", "/items", { body: JSON.stringify({ n: 1.5, extra: true }) })
    expect(refused.status).toBe(400)
    expect((refused.body as { details: ReadonlyArray<{ field: string }> }).details.map((d) => d.field).sort()).toEqual(["extra", "n"])
    expect(await call("POST", "/items", { body: "n=1", type: "application/x-www-form-urlencoded" })).toMatchObject({
      status: 400,
      body: { message: "Content-Type must be application/json" }
    })
    expect(await call("POST", "/items", { body: "{" })).toMatchObject({ status: 400, body: { message: "body: is not valid JSON" } })
    expect(await call("POST", "/items", { body: " " })).toMatchObject({ status: 400, body: { message: "body: is required (a JSON object)" } })
  })

  it("answers a declared error with its status and body", async () => {
    expect(await call("GET", "/items/missing")).toMatchObject({ status: 404, body: { status: 404, message: "Workflow not found" } })
  })

  it("answers 500 without details when a handler dies or answers what its own schema refuses", async () => {
    expect(await call("GET", "/crash")).toMatchObject({ status: 500, body: { status: 500, message: "Internal server error" } })
    expect(await call("GET", "/broken")).toMatchObject({ status: 500, body: { status: 500, message: "Internal server error" } })
  })
})
