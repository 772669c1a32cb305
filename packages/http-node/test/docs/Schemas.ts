/**
 * The JSON schemas of the OpenAPI document, said in a few words for a table's Type column:
 * `string, 1-100 characters`, `UUID or null`, `[Runner](#runner)[]`, `{type, min?, max?}`.
 * A named schema that has a table on the page is a link to it.
 */
export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
export type Obj = { readonly [key: string]: Json }

export const isObj = (u: Json | undefined): u is Obj => typeof u === "object" && u !== null && !Array.isArray(u)
export const objAt = (o: Obj, key: string): Obj => (isObj(o[key]) ? o[key] : {})
const strings = (u: Json | undefined): ReadonlyArray<string> => (Array.isArray(u) ? u.filter((s): s is string => typeof s === "string") : [])

/** What a reader sees of the schemas: the named ones, and where the page tables them. */
export interface Schemas {
  readonly components: Obj
  /** Schema name -> the page's anchor of its table. */
  readonly anchors: ReadonlyMap<string, string>
}

export const refName = (schema: Obj): string | undefined =>
  typeof schema["$ref"] === "string" ? schema["$ref"].replace("#/components/schemas/", "") : undefined

/** The named schema `schema` is, or is written out the same as (Effect inlines some). */
export const namedAs = (s: Schemas, schema: Obj): string | undefined => {
  const name = refName(schema)
  if (name !== undefined) return name
  const text = JSON.stringify(schema)
  if (Object.keys(objAt(schema, "properties")).length === 0) return undefined
  return Object.keys(s.components).find((n) => JSON.stringify(s.components[n]) === text)
}

/** The table of `name` on the page, or of a schema written out the same: its name there and anchor. */
export const tableOf = (s: Schemas, name: string): { readonly name: string; readonly anchor: string } | undefined => {
  const direct = s.anchors.get(name)
  if (direct !== undefined) return { name, anchor: direct }
  const text = JSON.stringify(s.components[name])
  for (const [other, anchor] of s.anchors) if (JSON.stringify(s.components[other]) === text) return { name: other, anchor }
  return undefined
}

/** Descriptions Effect writes for its own checks: the type column already says them. */
const GENERATED = [/^an? (integer|string|array|non-negative number|Universally Unique Identifier)\b/, /^a string to be decoded into/]
export const ownDescription = (schema: Json | undefined): string | undefined => {
  const d = isObj(schema) ? schema["description"] : undefined
  return typeof d === "string" && !GENERATED.some((g) => g.test(d)) ? d : undefined
}

const oneOf = (items: ReadonlyArray<string>): string =>
  items.length <= 1 ? (items[0] ?? "") : `${items.slice(0, -1).join(", ")} or ${items[items.length - 1]}`

const range = (min: Json | undefined, max: Json | undefined, unit: string): string =>
  typeof min === "number" && min > 0 && typeof max === "number" ? `, ${min}-${max}${unit}`
    : typeof max === "number" ? `, at most ${max}${unit}`
    : typeof min === "number" ? `, at least ${min}${unit}` : ""

const scalar = (schema: Obj): string => {
  const type = schema["type"]
  if (type === "string") {
    if (schema["format"] === "uuid") return "UUID"
    if (schema["format"] === "binary") return "file"
    if (typeof schema["description"] === "string" && schema["description"].startsWith("a string to be decoded into a number")) return "number (as text)"
    return `string${range(schema["minLength"], schema["maxLength"], " characters")}`
  }
  if (type === "integer" || type === "number") {
    const min = schema["minimum"], max = schema["maximum"]
    return `${type}${typeof min === "number" && typeof max !== "number" ? ` ≥ ${min}` : range(min, max, "")}`
  }
  return typeof type === "string" ? type : "any"
}

/** `schema` in a few words. */
export const typeText = (s: Schemas, schema: Json | undefined): string => {
  if (!isObj(schema)) return "any"
  const name = namedAs(s, schema)
  if (name !== undefined) {
    const table = tableOf(s, name)
    if (table !== undefined) return `[${table.name}](#${table.anchor})`
    const component = objAt(s.components, name)
    if (refName(schema) === undefined || Object.keys(objAt(component, "properties")).length > 0) return name
    // A named string with a meaning of its own reads as its name (`Timestamp`: "timestamp").
    if (component["type"] === "string" && !Array.isArray(component["enum"]) && ownDescription(component) !== undefined) return name.replace(/^./, (c) => c.toLowerCase())
    // Any other named scalar, enum or map reads as what it is, with the checks the reference adds.
    const { $ref: _ref, ...checks } = schema
    return typeText(s, { ...component, ...checks })
  }
  if (Array.isArray(schema["anyOf"])) {
    const members = schema["anyOf"].filter(isObj)
    const nullable = members.some((m) => m["type"] === "null")
    const others = members.filter((m) => m["type"] !== "null")
    // A form field that takes a file part or a text value.
    const upload = others.length === 2 && others.some((m) => m["format"] === "binary") && others.every((m) => m["type"] === "string")
    const joined = upload ? "file or text" : others.map((m) => typeText(s, m)).join(" or ")
    return nullable ? `${joined} or null` : joined
  }
  if (Array.isArray(schema["enum"])) return oneOf(schema["enum"].map((v) => (typeof v === "string" ? `\`${v}\`` : String(v))))
  if (schema["type"] === "array") {
    if (Array.isArray(schema["prefixItems"])) return `[${schema["prefixItems"].map((i) => typeText(s, i)).join(", ")}]`
    const item = typeText(s, schema["items"])
    return `${item.includes(" or ") ? `(${item})` : item}[]${range(schema["minItems"], schema["maxItems"], " items")}`
  }
  if (schema["type"] === "object" || isObj(schema["properties"])) {
    const props = Object.entries(objAt(schema, "properties"))
    const required = new Set(strings(schema["required"]))
    // A property with one possible value says it (`{type: BOOLEAN}`), the others their name.
    const said = ([p, v]: readonly [string, Json]) => {
      const only = isObj(v) && Array.isArray(v["enum"]) && v["enum"].length === 1 ? `: ${String(v["enum"][0])}` : ""
      return `${p}${required.has(p) ? "" : "?"}${only}`
    }
    if (props.length > 0) return `{${props.map(said).join(", ")}}`
    const extra = schema["additionalProperties"]
    return isObj(extra) && Object.keys(extra).length > 0 ? `object of ${typeText(s, extra)}` : "object"
  }
  return scalar(schema)
}

export const requiredOf = (schema: Obj): ReadonlySet<string> => new Set(strings(schema["required"]))
