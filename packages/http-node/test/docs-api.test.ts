/**
 * docs/api.md cannot drift from the OpenAPI document: its generated regions (each operation's
 * parameters, body fields and answers; each resource's fields) are what `pnpm docs:api` writes
 * from the document, every operation and every resource an answer carries has one, and the
 * statuses its hand-written text shows for an operation are ones the operation declares.
 */
import { describe, expect, it } from "vitest"
import { openApiDocument } from "./docs/ApiSpec.js"
import { apiPage } from "./docs/Pages.js"
import { isObj, type Json, type Obj } from "./docs/Schemas.js"

const document = openApiDocument()

/** The document with `change` applied to a copy. */
const changed = (change: (spec: { [key: string]: Json }) => void): Obj => {
  const copy = JSON.parse(JSON.stringify(document)) as { [key: string]: Json }
  change(copy)
  return copy
}
const at = (node: Json | undefined, ...keys: ReadonlyArray<string>): { [key: string]: Json } => {
  let here = node
  for (const key of keys) here = isObj(here) ? here[key] : undefined
  if (!isObj(here)) throw new Error(`no ${keys.join(".")} in the OpenAPI document`)
  return here as { [key: string]: Json }
}

describe("docs/api.md against the OpenAPI document", () => {
  it("documents every operation and resource, and shows only declared statuses", () => {
    expect(apiPage(document).problems).toEqual([])
  })

  it("says what the OpenAPI document says, in every generated region (else: run pnpm docs:api)", () => {
    const page = apiPage(document)
    expect(page.current, "docs/api.md differs from the OpenAPI document: run pnpm docs:api").toBe(page.expected)
  })
})

describe("what makes the docs/api.md check fail", () => {
  it("a field added to a resource", () => {
    const spec = changed((s) => {
      at(s, "components", "schemas", "WorkflowSummary", "properties")["owner_note"] = { type: "string" }
    })
    const page = apiPage(spec)
    expect(page.expected).not.toBe(page.current)
    expect(page.expected).toContain("| `owner_note` | string (optional) |")
  })

  it("a query parameter renamed", () => {
    const spec = changed((s) => {
      const list = at(s, "paths", "/v1/workflow", "get")
      list["parameters"] = (list["parameters"] as ReadonlyArray<Json>).map((p) => (isObj(p) && p["name"] === "tag" ? { ...p, name: "label" } : p))
    })
    const page = apiPage(spec)
    expect(page.expected).toContain("| `label` | query | string |")
    expect(page.expected).not.toContain("| `tag` | query |")
  })

  it("an operation the page does not document, and one it documents that is gone", () => {
    const spec = changed((s) => {
      const paths = at(s, "paths")
      paths["/v1/workflow/{id}/pause"] = { post: { summary: "Pause", responses: { "200": { description: "Success" } } } }
      delete paths["/healthz"]
    })
    const problems = apiPage(spec).problems.join("\n")
    expect(problems).toContain("docs/api.md does not document POST /v1/workflow/{id}/pause")
    expect(problems).toContain("has a region \"openapi GET /healthz\", which the OpenAPI document does not have")
    expect(problems).toContain("the heading \"`GET /healthz`\" names GET /healthz, which the OpenAPI document does not have")
  })

  it("a status the text shows that the operation no longer declares", () => {
    const spec = changed((s) => {
      delete at(s, "paths", "/v1/workflow/{id}/cancel", "post", "responses")["409"]
    })
    expect(apiPage(spec).problems).toContain(
      "docs/api.md the section \"`POST /v1/workflow/{id}/cancel`\" shows status 409, which the OpenAPI document does not declare for POST /v1/workflow/{id}/cancel"
    )
  })

  it("a resource an answer carries without a table on the page", () => {
    const spec = changed((s) => {
      at(s, "components", "schemas")["Quota"] = { type: "object", required: ["left"], properties: { left: { type: "integer" } } }
      at(s, "components", "schemas", "CurrentUser", "properties")["quota"] = { $ref: "#/components/schemas/Quota" }
    })
    expect(apiPage(spec).problems.join("\n")).toContain("docs/api.md has no table of Quota, which an answer carries")
  })
})
