/**
 * Where the served OpenAPI document may differ from test/golden/openapi.json: only what Effect 4's
 * JSON Schema writer writes differently and cannot be told not to. Each difference is a named rule
 * that rewrites the golden document the way Effect 4 writes it, with why no client is affected.
 * golden.test.ts applies every rule in turn to the golden document, then compares byte for byte:
 * a rule that changes nothing (stale) fails, and so does any difference no rule explains (new).
 */

export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
type JsonObject = { readonly [key: string]: Json }

export interface Difference {
  readonly name: string
  /** Why a client (a reader of the document, a generated client, a caller of the API) is unaffected. */
  readonly why: string
  /**
   * The document as Effect 4 writes it in this respect (a new document). `served` is the served
   * document: only the order of keys may be taken from it.
   */
  readonly apply: (document: Json, served: Json) => Json
}

const isObject = (u: Json | undefined): u is JsonObject => typeof u === "object" && u !== null && !Array.isArray(u)

/** `document` with `f` applied to every object in it, innermost first. */
const everyObject = (document: Json, f: (node: JsonObject) => JsonObject): Json => {
  if (Array.isArray(document)) return document.map((item: Json) => everyObject(item, f))
  if (!isObject(document)) return document
  return f(Object.fromEntries(Object.entries(document).map(([key, value]) => [key, everyObject(value, f)])))
}

const without = (node: JsonObject, ...keys: ReadonlyArray<string>): JsonObject =>
  Object.fromEntries(Object.entries(node).filter(([key]) => !keys.includes(key)))

const isEmptyArray = (u: Json | undefined) => Array.isArray(u) && u.length === 0
const isEmptyObject = (u: Json | undefined) => isObject(u) && Object.keys(u).length === 0

/** `document`'s keys in `served`'s order wherever both have them (the others after, as they were). */
const inServedOrder = (document: Json, served: Json): Json => {
  if (Array.isArray(document)) {
    return document.map((item: Json, i) => (Array.isArray(served) && i < served.length ? inServedOrder(item, served[i]!) : item))
  }
  if (!isObject(document)) return document
  const order = isObject(served) ? Object.keys(served).filter((key) => key in document) : []
  const keys = [...order, ...Object.keys(document).filter((key) => !order.includes(key))]
  return Object.fromEntries(keys.map((key) => [key, isObject(served) && key in served ? inServedOrder(document[key]!, served[key]!) : document[key]!]))
}

export const acceptedDifferences: ReadonlyArray<Difference> = [
  {
    name: "a struct whose fields are all optional has no empty `required`",
    why: "JSON Schema reads an absent `required` as an empty one: the same fields are required (none).",
    apply: (document) =>
      everyObject(document, (node) =>
        node["type"] === "object" && isEmptyArray(node["required"]) && isObject(node["properties"]) && !isEmptyObject(node["properties"])
          ? without(node, "required")
          : node)
  },
  {
    name: "a record has no empty `required` and `properties`",
    why: "An object schema whose values are all given by `additionalProperties` (RunnerHeaders: header name -> string) " +
      "means the same with or without an empty `required` and `properties`.",
    apply: (document) =>
      everyObject(document, (node) =>
        node["type"] === "object" && isObject(node["additionalProperties"]) && isEmptyArray(node["required"]) && isEmptyObject(node["properties"])
          ? without(node, "required", "properties")
          : node)
  },
  {
    name: "a refined integer is written inline, not as a `$ref` to Int beside its own keywords",
    why: "`{$ref: Int, minimum: 0}` and `{type: integer, minimum: 0}` accept the same values (Int is `{type: integer}`); " +
      "the title and description of the refinement are kept, only the Int component's own (\"an integer\") is not repeated.",
    apply: (document) =>
      everyObject(document, (node) =>
        node["$ref"] === "#/components/schemas/Int" && Object.keys(node).length > 1 ? { type: "integer", ...without(node, "$ref") } : node)
  },
  {
    name: "a tuple is closed with `maxItems`, not `items: false`",
    why: "`prefixItems` of n items with `minItems: n` and `maxItems: n` accepts exactly the arrays that `items: false` " +
      "(no item past the prefix) does: the workflow's parameters as [placeholder, value] pairs.",
    apply: (document) =>
      everyObject(document, (node) =>
        Array.isArray(node["prefixItems"]) && node["items"] === false ? { ...without(node, "items"), maxItems: node["prefixItems"].length } : node)
  },
  {
    name: "a template literal key pattern groups its alternatives without capturing",
    why: "`^(?:\\$|#)[\\s\\S]*?$` and `^(\\$|#)[\\s\\S]*?$` match the same field names (the forms' `$name`/`#name` parameters); " +
      "a capture group has no meaning in a JSON Schema pattern.",
    apply: (document) =>
      everyObject(document, (node) =>
        isObject(node["patternProperties"])
          ? {
            ...node,
            patternProperties: Object.fromEntries(
              Object.entries(node["patternProperties"]).map(([pattern, schema]) => [pattern.replace(/^\^\((?!\?:)/, "^(?:"), schema])
            )
          }
          : node)
  },
  {
    name: "a form with dynamic fields says it takes no other field (`additionalProperties: false`)",
    why: "The server has always refused a field that is neither declared nor a `$`/`#` parameter (a 400 naming it, " +
      "golden/errors.json); the document now says so. A client sending what the server accepts sends the same.",
    apply: (document) =>
      everyObject(document, (node) =>
        isObject(node["patternProperties"]) && !("additionalProperties" in node) ? { ...node, additionalProperties: false } : node)
  },
  {
    name: "keywords, fields and components are written in Effect 4's order",
    why: "The order of an object's keys carries no meaning in JSON (nor in JSON Schema or OpenAPI): " +
      "`type, properties, required` and `type, required, properties` are the same schema.",
    apply: inServedOrder
  }
]
