/**
 * The decoding cases, derived from the declaration: for each endpoint of WesApi, each declared
 * field of its body, query and headers with a value that field's own schema rejects, and bodies
 * with a field they do not declare. A route added later is covered without touching this file.
 */
import { FormFile, WesApi } from "@wes/api"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as HttpApi from "effect/http-api/HttpApi"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import * as Stream from "effect/Stream"
import { compact, type Request } from "./replay.js"

type Value = { readonly _tag: "json"; readonly value: unknown } | { readonly _tag: "text"; readonly value: string } | { readonly _tag: "file"; readonly text: string }

export interface Case {
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
const rejects = (ast: AST.AST, input: unknown) => Exit.isFailure(Schema.decodeUnknownExit(Schema.make<Schema.Codec<unknown, unknown>>(ast))(input))

/** The declared fields of a struct (of each member of a union). */
const fieldsOf = (ast: AST.AST): ReadonlyArray<AST.PropertySignature> =>
  AST.isObjects(ast) ? ast.propertySignatures : AST.isUnion(ast) ? ast.types.flatMap(fieldsOf) : AST.isSuspend(ast) ? fieldsOf(ast.thunk()) : []

/** For each declared field of a struct: a value its schema rejects (first candidate that is). */
const casesOf = (endpoint: string, ast: AST.AST, where: Case["where"], candidates: ReadonlyArray<Value>, toInput: (v: Value) => unknown) =>
  fieldsOf(ast).flatMap((ps): ReadonlyArray<Case> => {
    const bad = candidates.find((v) => rejects(ps.type, toInput(v)))
    return bad === undefined ? [] : [{ endpoint, field: String(ps.name), where, value: bad }]
  })

export interface Route {
  readonly key: string
  readonly method: string
  readonly path: string
  /** Whether it declares a body, a query or headers. */
  readonly declares: boolean
  readonly cases: ReadonlyArray<Case>
}

export const routes: Array<Route> = []
HttpApi.reflect(WesApi, {
  onGroup: () => {},
  onEndpoint: ({ endpoint }) => {
    const key = `${endpoint.method} ${endpoint.path}`
    const cases: Array<Case> = []
    for (const [contentType, { schemas: [schema] }] of endpoint.payload) {
      const form = contentType === "multipart/form-data"
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
    }
    const texts = TEXT_CANDIDATES.map((value): Value => ({ _tag: "text", value }))
    const asText = (v: Value) => (v._tag === "text" ? v.value : undefined)
    if (endpoint.query !== undefined) cases.push(...casesOf(key, endpoint.query.ast, "query", texts, asText))
    if (endpoint.headers !== undefined) cases.push(...casesOf(key, endpoint.headers.ast, "header", texts, asText))
    const declares = endpoint.payload.size > 0 || endpoint.query !== undefined || endpoint.headers !== undefined
    routes.push({ key, method: endpoint.method, path: endpoint.path, declares, cases })
  }
})

/** The request of a case: the route's path (any id: decoding comes first), from the user or the operator. */
export const requestOf = (route: Route, c: Case): Request => {
  const path = route.path.replace(/:[a-z_]+/g, "018f0000-0000-7000-8000-000000000000")
  const text = c.value._tag === "text" ? c.value.value : c.value._tag === "file" ? c.value.text : JSON.stringify(c.value.value)
  const query = c.where === "query" ? `?${new URLSearchParams({ [c.field]: text })}` : ""
  const base = { method: route.method, path: compact(path + query), auth: route.path.startsWith("/admin/") ? "admin" as const : "user" as const }
  if (c.where === "header") return { ...base, headers: { [c.field]: compact(text) } }
  if (c.where === "query") return base
  if (c.value._tag === "json") return { ...base, headers: { "content-type": "application/json" }, body: { text: compact(JSON.stringify({ [c.field]: c.value.value })) } }
  const part = c.value._tag === "file"
    ? { name: c.field, filename: "f.json", type: "application/json", content: compact(text) }
    : { name: c.field, value: compact(text) }
  return { ...base, body: { form: [part] } }
}
