import { Validator } from "@seriousme/openapi-schema-validator"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readJson, startServer, type TestServer } from "./harness.js"

describe("OpenAPI document and docs page", () => {
  let server: TestServer
  let spec: {
    openapi: string
    paths: Record<string, Record<string, { security?: unknown; responses: Record<string, unknown>; operationId: string }>>
    components: { securitySchemes: Record<string, unknown>; schemas: Record<string, unknown> }
  }
  beforeAll(async () => {
    server = await startServer()
    spec = await readJson<typeof spec>(await server.fetch("/v1/openapi.json"))
  })
  afterAll(async () => { await server.close() })

  it("is a valid OpenAPI document", async () => {
    const validator = new Validator()
    const result = await validator.validate(spec)
    expect(result.errors ?? []).toEqual([])
    expect(result.valid).toBe(true)
    expect(spec.openapi).toMatch(/^3\.1/)
  })

  it("lists every public operation, and no operator route", () => {
    const operations = Object.entries(spec.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`)).sort()
    expect(operations).toEqual([
      "DELETE /v1/runner/{id}", "DELETE /v1/runner/{id}/agent-token/{token_id}", "DELETE /v1/template/{id}", "DELETE /v1/webhook",
      "GET /healthz", "GET /readyz",
      "GET /v1/managed-runner", "GET /v1/managed-runner/{id}/history",
      "GET /v1/runner", "GET /v1/runner/{id}", "GET /v1/runner/{id}/agent-tokens", "GET /v1/runner/{id}/history",
      "GET /v1/template", "GET /v1/template/{id}", "GET /v1/user", "GET /v1/webhook",
      "GET /v1/workflow", "GET /v1/workflow/{id}", "GET /v1/workflow/{id}/deliveries", "GET /v1/workflow/{id}/outputs",
      "GET /v1/workflow/{id}/outputs.zip", "GET /v1/workflow/{id}/outputs/{output_id}", "GET /v1/workflow/{id}/subscribe",
      "PATCH /v1/runner/{id}",
      "POST /v1/runner", "POST /v1/runner/{id}/agent-token", "POST /v1/template", "POST /v1/webhook/rotate-secret", "POST /v1/workflow", "POST /v1/workflow/parameters",
      "POST /v1/workflow/{id}/cancel", "POST /v1/workflow/{id}/deliveries/{delivery_id}/retry", "POST /v1/workflow/{id}/rerun",
      "PUT /v1/runner/{id}", "PUT /v1/template/{id}", "PUT /v1/webhook"
    ])
  })

  it("declares the bearer security scheme on every /v1 operation", () => {
    expect(spec.components.securitySchemes).toEqual({ bearer: { type: "http", scheme: "bearer" } })
    for (const [path, methods] of Object.entries(spec.paths)) {
      for (const op of Object.values(methods)) {
        if (path.startsWith("/v1/")) expect([path, op.security]).toEqual([path, [{ bearer: [] }]])
      }
    }
  })

  it("documents the contract's error responses and resource schemas", () => {
    const create = spec.paths["/v1/workflow"]!["post"]!
    expect(Object.keys(create.responses).sort()).toEqual(["201", "400", "401", "403", "404", "405", "429", "431", "500", "503"])
    for (const name of ["WorkflowSummary", "WorkflowDetail", "Runner", "ManagedRunner", "Template", "TemplateListItem", "CurrentUser", "BadRequest", "Unauthorized", "Webhook", "WebhookDelivery", "DeliveryAttempt"]) {
      expect(Object.keys(spec.components.schemas)).toContain(name)
    }
    expect(JSON.stringify(spec)).not.toContain("/admin/")
    // Decode failures are answered with the contract's 400 body, and documented as such.
    expect(JSON.stringify(spec)).not.toContain("HttpApiDecodeError")
    expect(create.responses["400"]).toMatchObject({ content: { "application/json": { schema: { $ref: "#/components/schemas/BadRequest" } } } })
  })

  it("renders an API reference at /docs", async () => {
    const res = await server.fetch("/docs")
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toContain("text/html")
    const html = await res.text()
    // Rendered on the server from the OpenAPI document: every operation and schema is on the page.
    for (const [path, methods] of Object.entries(spec.paths)) {
      for (const method of Object.keys(methods)) expect(html).toContain(`${method.toUpperCase()}</span> <code>${path}</code>`)
    }
    for (const name of Object.keys(spec.components.schemas)) expect(html).toContain(`id="schema-${name}"`)
    expect(html).not.toContain("<script")
  })
})
