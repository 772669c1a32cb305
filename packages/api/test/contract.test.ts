/**
 * The declaration's own rules: core's errors sent as the contract's bodies, forms decoded
 * strictly from what the multipart reader hands over, and what the OpenAPI document promises
 * about security, the operator API and parameters. (The whole document is compared with the
 * golden by @wes/http-node's golden.test.ts.)
 */
import { describe, expect, it } from "@effect/vitest"
import {
  apiErrors,
  Conflict,
  DeliveryNotFound,
  InvalidToken,
  ManagedRunnerNotFound,
  ManagedRunnersForbidden,
  MissingAuthorization,
  MissingCapabilities,
  NoEligibleRunner,
  OutputExpired,
  OutputNotFound,
  RunnerNotFound,
  RunnerProbeFailed,
  StorageError,
  TemplateNotFound,
  TierLimitExceeded,
  TokenExpired,
  TokenNotFound,
  UserNotFound,
  ValidationError,
  WebhookNotFound,
  WorkflowNotFound
} from "@wes/core"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as HttpApi from "effect/http-api/HttpApi"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import {
  BadRequest,
  ConflictStatus,
  CreateWorkflowForm,
  Forbidden,
  FormFile,
  Gone,
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
    expect(send(NotFoundStatus, new WorkflowNotFound())).toEqual({ status: 404, message: "Workflow not found" })
    expect(send(NotFoundStatus, new WebhookNotFound())).toEqual({ status: 404, message: "No webhook is set up (PUT /v1/webhook)" })
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

  it("send every error core can end a request with under the contract's status, none left out", () => {
    const contract = {
      ValidationError: 400, NoEligibleRunner: 400, MissingCapabilities: 400, RunnerProbeFailed: 400,
      MissingAuthorization: 401, InvalidToken: 401, TokenExpired: 401,
      TierLimitExceeded: 403, ManagedRunnersForbidden: 403,
      WorkflowNotFound: 404, TemplateNotFound: 404, RunnerNotFound: 404, ManagedRunnerNotFound: 404, UserNotFound: 404,
      TokenNotFound: 404, OutputNotFound: 404, WebhookNotFound: 404, DeliveryNotFound: 404,
      Conflict: 409,
      OutputExpired: 410,
      StorageError: 503
    } as const
    const declaredFor = { 400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFoundStatus, 409: ConflictStatus, 410: Gone, 503: Unavailable }
    const m = "m"
    const samples = [
      ValidationError.field("name", m), new NoEligibleRunner({ message: m, tags: [] }), new MissingCapabilities({ message: m, runners: [] }),
      new RunnerProbeFailed({ message: m }), new MissingAuthorization(), new InvalidToken(), new TokenExpired(),
      new TierLimitExceeded({ message: m, limit: "runners", value: 1 }), new ManagedRunnersForbidden({ message: m }),
      new WorkflowNotFound(), new TemplateNotFound(), new RunnerNotFound(), new ManagedRunnerNotFound(), new UserNotFound(),
      new TokenNotFound(), new OutputNotFound(), new WebhookNotFound(), new DeliveryNotFound(),
      new Conflict({ message: m }), new OutputExpired({ message: m, expired_at: "2026-11-28T00:00:00.000Z" }), new StorageError({ message: m })
    ]
    // Each is encoded by the one schema of the contract's status: only its members encode.
    const sent = samples.map((e) => [e._tag, (send(declaredFor[contract[e._tag]], e) as { status: number }).status])
    expect(Object.fromEntries(sent)).toEqual(contract)
    expect(apiErrors.map((e) => e.identifier).sort()).toEqual(Object.keys(contract).sort())
    expect(() => send(NotFoundStatus, new Conflict({ message: m }))).toThrow()
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
