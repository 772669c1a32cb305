/** What a generated region of docs/api.md says: an operation, or a schema's fields or values. */
import { isObj, type Json, namedAs, type Obj, objAt, ownDescription, requiredOf, type Schemas, typeText } from "./Schemas.js"
import { type Notes, table } from "./Tables.js"

const code = (s: string) => `\`${s}\``

/** The key of a `patternProperties` entry: `$<name>`, `#<name>` for the dynamic parameters. */
const patternKey = (pattern: string): string => {
  const re = new RegExp(pattern)
  const prefixes = ["$", "#"].filter((p) => re.test(`${p}name`))
  return prefixes.length > 0 && !re.test("name") ? prefixes.map((p) => code(`${p}<name>`)).join(", ") : `fields matching ${code(pattern)}`
}

const fieldRows = (s: Schemas, schema: Obj, skip: ReadonlySet<string>, withRequired: boolean) => {
  const required = requiredOf(schema)
  const rows = Object.entries(objAt(schema, "properties")).filter(([name]) => !skip.has(name)).map(([name, field]) => {
    const type = typeText(s, field)
    const cells = withRequired ? [code(name), type, required.has(name) ? "yes" : ""] : [code(name), required.has(name) ? type : `${type} (optional)`]
    return { cells, fallback: ownDescription(field) }
  })
  const patterns = Object.entries(objAt(schema, "patternProperties")).map(([pattern, field]) => ({
    cells: withRequired ? [patternKey(pattern), typeText(s, field), ""] : [patternKey(pattern), typeText(s, field)],
    fallback: ownDescription(field)
  }))
  return [...rows, ...patterns]
}

const contentText = (s: Schemas, response: Obj): string => {
  const content = Object.entries(objAt(response, "content"))
  if (content.length === 0) return "(no body)"
  const described = ownDescription(response)
  const note = described !== undefined && described !== "Success" && !(described in s.components) ? `: ${described.replace(/\.$/, "")}` : ""
  return content.map(([type, media]) => (type === "application/json" ? bodyText(s, isObj(media) ? media["schema"] : undefined) : code(type))).join(" or ") + note
}

/** An answer's body: a list's wrapper object says its fields' types too (`{runners: Runner[], total: integer}`). */
const bodyText = (s: Schemas, schema: Json | undefined): string => {
  if (!isObj(schema) || namedAs(s, schema) !== undefined || !isObj(schema["properties"])) return typeText(s, schema)
  return `{${Object.entries(schema["properties"]).map(([name, field]) => `${name}: ${typeText(s, field)}`).join(", ")}}`
}

export const renderOperation = (s: Schemas, op: Obj, notes: Notes): string => {
  const parts: Array<string> = []
  const intro = [op["summary"], op["description"]].filter((t): t is string => typeof t === "string")
  const secured = Array.isArray(op["security"]) && op["security"].length > 0
  parts.push([...intro, ...(secured ? [] : ["No token needed"])].map((t) => (t.endsWith(".") ? t : `${t}.`)).join(" "))
  const params = (Array.isArray(op["parameters"]) ? op["parameters"] : []).filter(isObj)
  if (params.length > 0) {
    parts.push(table(["Parameter", "In", "Type", "Required", "Notes"], params.map((p) => ({
      cells: [code(String(p["name"])), String(p["in"]), typeText(s, p["schema"]), p["required"] === true ? "yes" : ""],
      fallback: ownDescription(p)
    })), notes))
  }
  const body = objAt(op, "requestBody")
  for (const [type, media] of Object.entries(objAt(body, "content"))) {
    const schema = isObj(media) ? objAt(media, "schema") : {}
    const described = ownDescription(schema)
    parts.push(`Body, ${code(type)}${body["required"] === true ? "" : " (optional)"}${described === undefined ? "." : `: ${described}`}`)
    parts.push(table(["Field", "Type", "Required", "Notes"], fieldRows(s, schema, new Set(), true), notes))
  }
  const responses = Object.entries(objAt(op, "responses"))
  // Success, not modified and redirects are answers; 4xx and 5xx are errors.
  const answer = (status: string) => status.startsWith("2") || status.startsWith("3")
  const ok = responses.filter(([status]) => answer(status)).map(([status, r]) => {
    const response = isObj(r) ? r : {}
    const described = ownDescription(response)
    // A body-less answer other than the plain 204 says what it means.
    return status.startsWith("3") && described !== undefined ? `${code(status)} (no body): ${described.replace(/\.$/, "")}` : `${code(status)} ${contentText(s, response)}`
  })
  const errors = responses.filter(([status]) => !answer(status)).map(([status]) => code(status))
  parts.push(`Answers ${ok.join(" or ")}; or an [error](#errors): ${errors.join(", ")}.`)
  return parts.join("\n\n")
}

export const renderSchema = (s: Schemas, name: string, beyond: string | undefined, notes: Notes): string => {
  const schema = objAt(s.components, name)
  const parts: Array<string> = []
  const described = ownDescription(schema)
  if (described !== undefined) parts.push(described.endsWith(".") ? described : `${described}.`)
  if (Array.isArray(schema["enum"])) {
    parts.push(table(["Value", "Meaning"], schema["enum"].map((v: Json) => ({ cells: [code(String(v))], fallback: undefined })), notes))
  } else {
    const skip = new Set(beyond === undefined ? [] : Object.keys(objAt(objAt(s.components, beyond), "properties")))
    parts.push(table(["Field", "Type", "Notes"], fieldRows(s, schema, skip, false), notes))
  }
  return parts.join("\n\n")
}
