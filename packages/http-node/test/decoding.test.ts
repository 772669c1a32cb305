/**
 * Every route's request is decoded by the schemas its declaration shows (and the OpenAPI document
 * publishes): for each endpoint of WesApi, each declared field of its body, query and headers is
 * sent with a value that field's own schema rejects, and bodies with a field they do not declare;
 * each answer must be the contract's 400 naming that field. The cases come from the declaration,
 * so a route added later is covered without touching this file.
 */
import * as HttpApi from "@effect/platform/HttpApi"
import * as HttpApiSchema from "@effect/platform/HttpApiSchema"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import * as Stream from "effect/Stream"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { WesApi } from "../src/Api.js"
import { FormFile } from "../src/Forms.js"
import { ADMIN_TOKEN, type ErrorBody, readJson, startServer, type TestServer } from "./harness.js"

type Value = { readonly _tag: "json"; readonly value: unknown } | { readonly _tag: "text"; readonly value: string } | { readonly _tag: "file"; readonly text: string }

interface Case {
  readonly endpoint: string
  /** The field the answer must name. */
  readonly field: string
  readonly where: "body" | "query" | "header"
  readonly value: Value
}

const JSON_CANDIDATES: ReadonlyArray<unknown> = [12345, "", [], {}, null, "x".repeat(5_000), -1, "not-a-value"]
const TEXT_CANDIDATES: ReadonlyArray<string> = ["x", "-1", "0", "", "1.5", "x".repeat(5_000)]
const fileOf = (text: string) => new FormFile("f", "f.json", "application/json", text.length, Stream.make(new TextEncoder().encode(text)), Effect.succeed(text))
const FORM_CANDIDATES: ReadonlyArray<Value> = [{ _tag: "file", text: "{}" }, { _tag: "text", value: "{not json" }, { _tag: "file", text: "{not json" }]

/** Whether `schema` rejects `input`. */
const rejects = (ast: AST.AST, input: unknown) => Either.isLeft(Schema.decodeUnknownEither(Schema.make(ast))(input))

/** For each declared field of a struct: a value its schema rejects (first candidate that is). */
const casesOf = (endpoint: string, ast: AST.AST, where: Case["where"], candidates: ReadonlyArray<Value>, toInput: (v: Value) => unknown) =>
  AST.getPropertySignatures(ast).flatMap((ps): ReadonlyArray<Case> => {
    const bad = candidates.find((v) => rejects(ps.type, toInput(v)))
    return bad === undefined ? [] : [{ endpoint, field: String(ps.name), where, value: bad }]
  })

interface Route {
  readonly key: string
  readonly method: string
  readonly path: string
  /** Whether it declares a body, a query or headers. */
  readonly declares: boolean
  readonly cases: ReadonlyArray<Case>
}

const routes: Array<Route> = []
HttpApi.reflect(WesApi, {
  onGroup: () => {},
  onEndpoint: ({ endpoint }) => {
    const key = `${endpoint.method} ${endpoint.path}`
    const cases: Array<Case> = []
    Option.map(endpoint.payloadSchema, (schema) => {
      const form = HttpApiSchema.getMultipart(schema.ast) !== undefined
      const undeclared: Case = {
        endpoint: key,
        field: "not_a_declared_field",
        where: "body",
        value: form ? { _tag: "text", value: "x" } : { _tag: "json", value: 1 }
      }
      cases.push(undeclared)
      cases.push(...(form
        ? casesOf(key, schema.ast, "body", FORM_CANDIDATES, (v) => (v._tag === "file" ? fileOf(v.text) : v._tag === "text" ? v.value : v.value))
        : casesOf(key, schema.ast, "body", JSON_CANDIDATES.map((value) => ({ _tag: "json", value })), (v) => (v._tag === "json" ? v.value : undefined))))
    })
    const texts = TEXT_CANDIDATES.map((value): Value => ({ _tag: "text", value }))
    const asText = (v: Value) => (v._tag === "text" ? v.value : undefined)
    Option.map(endpoint.urlParamsSchema, (schema) => cases.push(...casesOf(key, schema.ast, "query", texts, asText)))
    Option.map(endpoint.headersSchema, (schema) => cases.push(...casesOf(key, schema.ast, "header", texts, asText)))
    const declares = Option.isSome(endpoint.payloadSchema) || Option.isSome(endpoint.urlParamsSchema) || Option.isSome(endpoint.headersSchema)
    routes.push({ key, method: endpoint.method, path: endpoint.path, declares, cases })
  }
})

describe("every route's request is decoded by its declared schema", () => {
  let server: TestServer
  let userAuth: Record<string, string>
  beforeAll(async () => {
    server = await startServer()
    userAuth = (await server.user("plus")).auth
  })
  afterAll(async () => { await server.close() })

  const send = (route: Route, c: Case) => {
    const path = route.path.replace(/:[a-z_]+/g, "018f0000-0000-7000-8000-000000000000")
    const headers: Record<string, string> = route.path.startsWith("/admin/") ? { authorization: `Bearer ${ADMIN_TOKEN}` } : { ...userAuth }
    let query = ""
    let body: FormData | string | undefined
    const text = c.value._tag === "text" ? c.value.value : c.value._tag === "file" ? c.value.text : JSON.stringify(c.value.value)
    if (c.where === "query") query = `?${new URLSearchParams({ [c.field]: text })}`
    if (c.where === "header") headers[c.field] = text
    if (c.where === "body" && c.value._tag === "json") {
      headers["content-type"] = "application/json"
      body = JSON.stringify({ [c.field]: c.value.value })
    } else if (c.where === "body") {
      const form = new FormData()
      if (c.value._tag === "file") form.append(c.field, new Blob([c.value.text], { type: "application/json" }), "f.json")
      else form.append(c.field, c.value.value)
      body = form
    }
    return server.fetch(path + query, { method: route.method, headers, ...(body === undefined ? {} : { body }) })
  }

  it("answers a field the schema rejects with a 400 naming it, on every route that declares one", async () => {
    const answers: Array<unknown> = []
    const wording: Array<string> = []
    for (const route of routes) {
      for (const c of route.cases) {
        const res = await send(route, c)
        const error = await readJson<ErrorBody>(res)
        answers.push({ ...c, status: res.status, named: (error.details ?? []).some((d) => d.field === c.field) })
        // Details speak the contract's words: no schema wording, no echo of what was sent.
        for (const d of error.details ?? []) if (/^Expected |, actual |DateTime|readonly|ReadonlyArray/.test(d.message)) wording.push(`${route.key} ${d.field}: ${d.message}`)
      }
    }
    expect(answers).toEqual(answers.map((a) => ({ ...(a as object), status: 400, named: true })))
    expect(wording).toEqual([])
    // Every route that declares a body, a query or headers was exercised.
    expect(routes.filter((r) => r.declares && r.cases.length === 0).map((r) => r.key)).toEqual([])
    expect(answers.length).toBeGreaterThan(40)
    console.log(`decoding: ${answers.length} cases over ${routes.filter((r) => r.cases.length > 0).length} routes`)
  }, 60_000)
})
