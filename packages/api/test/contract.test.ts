/**
 * The declaration's own rules: core's errors sent as the contract's bodies, forms decoded
 * strictly from what the multipart reader hands over, and what the OpenAPI document promises
 * about security, the operator API and parameters. (The whole document is compared with the
 * golden by @wes/http-node's golden.test.ts.)
 */
import { describe, expect, it } from "@effect/vitest"
import { MissingCapabilities, NotFound, StorageError, TokenExpired, ValidationError } from "@wes/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpApi from "effect/http-api/HttpApi"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import {
  BadRequest,
  CreateWorkflowForm,
  FormFile,
  NotFoundStatus,
  paramsOf,
  Unauthorized,
  Unavailable,
  WesApi
} from "../src/index.js"

/** The JSON body the server sends for `error` under the declared `schema`. */
const send = (schema: Schema.Codec<unknown, unknown>, error: unknown) => Schema.encodeUnknownSync(Schema.toCodecJson(schema))(error)

describe("declared errors", () => {
  it("send core's errors as the contract's bodies", () => {
    expect(send(NotFoundStatus, NotFound.workflow())).toEqual({ status: 404, message: "Workflow not found" })
    expect(send(Unauthorized, new TokenExpired())).toEqual({ status: 401, message: "Token has expired" })
    expect(send(Unavailable, new StorageError({ message: "connection refused" }))).toEqual({
      status: 503,
      message: "Service temporarily unavailable: the store cannot be reached"
    })
    expect(send(BadRequest, ValidationError.field("name", "is required"))).toEqual({
      status: 400,
      message: "name: is required",
      details: [{ field: "name", message: "is required" }]
    })
    const lacking = new MissingCapabilities({
      message: "No runner has the workflow's nodes and models",
      runners: [{ runner_id: "r1", runner_name: "gpu", node_classes: ["KSampler"], model_files: [] }]
    })
    expect(send(BadRequest, lacking)).toEqual({
      status: 400,
      message: "No runner has the workflow's nodes and models",
      details: [{ field: "runner:r1", message: "runner \"gpu\" lacks node classes: KSampler" }]
    })
  })
})

describe("forms", () => {
  const strict = { errors: "all", onExcessProperty: "error" } as const
  const decode = (form: Record<string, string | FormFile>) => Effect.runPromiseExit(Schema.decodeUnknownEffect(CreateWorkflowForm)(form, strict))
  const file = (field: string, text: string) =>
    new FormFile(field, `${field}.json`, "application/json", text.length, [new TextEncoder().encode(text)], Effect.succeed(text))

  it("decode a workflow file, text fields and dynamic parameters", async () => {
    const exit = await decode({ name: "w", workflow_json: file("workflow_json", "{\"1\":{}}"), "$prompt": "a cat", "#style": "sketch" })
    expect(exit._tag).toBe("Success")
    if (exit._tag !== "Success") return
    expect(exit.value.workflow_json).toEqual({ "1": {} })
    expect(paramsOf(exit.value)).toEqual([
      { field: "$prompt", value: { _tag: "Text", text: "a cat" } },
      { field: "#style", value: { _tag: "Text", text: "sketch" } }
    ])
  })

  it("refuse undeclared fields, files for text fields and invalid JSON, all at once", async () => {
    const exit = await decode({ name: file("name", "x"), workflow_json: "{", stray: "x" })
    expect(exit._tag).toBe("Failure")
    const text = String(exit)
    expect(text).toContain("must be a text field, not a file")
    expect(text).toContain("is not valid JSON")
    expect(text).toContain("stray")
  })
})

describe("the OpenAPI document", () => {
  const spec = OpenApi.fromApi(WesApi)

  it("declares bearer authentication for /v1 and leaves the operator API out", () => {
    expect(spec.components.securitySchemes).toEqual({ bearer: { type: "http", scheme: "bearer" } })
    expect(spec.paths["/v1/user"]?.get?.security).toEqual([{ bearer: [] }])
    expect(spec.paths["/healthz"]?.get?.security).toEqual([])
    expect(Object.keys(spec.paths).filter((p) => p.startsWith("/admin"))).toEqual([])
    expect(spec.tags.map((t) => t.name)).toEqual(["user", "workflows", "webhook", "templates", "runners", "managedRunners", "system"])
  })

  it("answers every operation's errors with the contract's bodies", () => {
    const responses = spec.paths["/v1/workflow/{id}/cancel"]?.post?.responses ?? {}
    expect(Object.keys(responses)).toEqual(["200", "400", "401", "404", "405", "409", "429", "431", "500", "503"])
    expect(responses["409"]).toEqual({ description: "Error", content: { "application/json": { schema: { $ref: "#/components/schemas/Conflict" } } } })
    expect(responses["400"]?.description).toBe("The request is invalid; `details` names the fields.")
  })

  it("documents parameters with their schema's description, Last-Event-ID with its pattern", () => {
    const parameters = spec.paths["/v1/workflow/{id}/subscribe"]?.get?.parameters ?? []
    expect(parameters[1]).toEqual({
      name: "last-event-id",
      in: "header",
      schema: { type: "string", pattern: "^\\s*(\\d{1,15})?\\s*$", description: "Resume after this event id (what the stream sent as `id:`)" },
      required: false,
      description: "Resume after this event id (what the stream sent as `id:`)"
    })
  })

  it("decodes request bodies strictly", () => {
    expect(Context.getOrUndefined(WesApi.annotations, HttpApi.PayloadParseOptions)).toEqual({ errors: "all", onExcessProperty: "error" })
  })
})
