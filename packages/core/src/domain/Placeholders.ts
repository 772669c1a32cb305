/**
 * Dynamic parameters (design.md section 5). A placeholder is a whole string value of a node input:
 *
 *   $text(name)  $text(name, default)  $file(name)  #choice(name)  #choice(name, a, b, c)
 *
 * Names are 1-255 characters of `[A-Za-z0-9_-]`. Form field `$name` feeds `$text(name)` (a string)
 * or `$file(name)` (a file part); `#name` feeds `#choice(name)`. A default makes a text
 * placeholder optional; a choice's first option is its default and its value must be one of the
 * options. A value that opens like a placeholder of no known kind (`$txt(name)`, `#text(name)`)
 * is refused naming the known kinds, rather than sent to the runner as text.
 */
import * as Result from "effect/Result"
import { type FieldIssue, ValidationError } from "./Errors.js"
import { isJsonObject, type JsonObject } from "./Json.js"
import type { WorkflowParam } from "./Workflow.js"

export type PlaceholderKind = "text" | "file" | "choice"

/** Where a placeholder appears: node id and input name. */
export interface PlaceholderLocation {
  readonly node: string
  readonly input: string
}

/** A placeholder declared by a workflow (merged over every place it appears). */
export interface Placeholder {
  readonly kind: PlaceholderKind
  readonly name: string
  /** Text default, or a choice's first option. */
  readonly default: string | undefined
  /** The allowed values of a choice (empty: any value). */
  readonly options: ReadonlyArray<string>
  readonly locations: ReadonlyArray<PlaceholderLocation>
}

const NAME = /^[A-Za-z0-9_-]{1,255}$/
const OPENING = /^(\$text|\$file|#choice)\(/
/** A value that opens like a placeholder of another kind (`$txt(`, `#text(`): a typo, refused. */
const LOOKALIKE = /^([$#][A-Za-z_][A-Za-z0-9_]*)\(/
const KINDS = "$text(name), $text(name, default), $file(name), #choice(name) and #choice(name, a, b, ...)"

/** `$text(name)`, `$file(name)` or `#choice(name)`: how `workflow_params` writes a placeholder. */
export const placeholderKey = (p: Pick<Placeholder, "kind" | "name">): string =>
  p.kind === "choice" ? `#choice(${p.name})` : `$${p.kind}(${p.name})`

/** The form field that feeds a placeholder: `$name` or `#name`. */
export const fieldName = (p: Pick<Placeholder, "kind" | "name">): string =>
  p.kind === "choice" ? `#${p.name}` : `$${p.name}`

type Parsed = { readonly kind: PlaceholderKind; readonly name: string; readonly default: string | undefined; readonly options: ReadonlyArray<string> }

/**
 * Parses one input value. `undefined`: not a placeholder. Left: it opens like one but is malformed.
 */
export const parsePlaceholder = (value: string): Result.Result<Parsed, string> | undefined => {
  const m = OPENING.exec(value)
  if (m === null) {
    const other = LOOKALIKE.exec(value)
    return other === null ? undefined : Result.fail(`${other[1]}( is not a placeholder kind; the kinds are ${KINDS}`)
  }
  const opener = m[1]!
  const kind: PlaceholderKind = opener === "$text" ? "text" : opener === "$file" ? "file" : "choice"
  if (!value.endsWith(")")) return Result.fail(`${opener}(...) must end with ")"`)
  const body = value.slice(opener.length + 1, -1)
  const comma = body.indexOf(",")
  const name = (comma === -1 ? body : body.slice(0, comma)).trim()
  if (!NAME.test(name)) {
    return Result.fail(`placeholder name ${JSON.stringify(name)} must be 1-255 characters of A-Z, a-z, 0-9, _ and -`)
  }
  const rest = comma === -1 ? undefined : body.slice(comma + 1)
  switch (kind) {
    case "file":
      return rest === undefined
        ? Result.succeed({ kind, name, default: undefined, options: [] })
        : Result.fail(`$file(${name}) takes no default`)
    case "text":
      return Result.succeed({ kind, name, default: rest?.trim(), options: [] })
    case "choice": {
      if (rest === undefined) return Result.succeed({ kind, name, default: undefined, options: [] })
      const options = rest.split(",").map((o) => o.trim())
      if (options.some((o) => o === "")) return Result.fail(`#choice(${name}, ...) has an empty option`)
      if (new Set(options).size !== options.length) return Result.fail(`#choice(${name}, ...) lists an option twice`)
      return Result.succeed({ kind, name, default: options[0], options })
    }
  }
}

const sameDeclaration = (a: Parsed, b: Parsed): boolean =>
  a.kind === b.kind && a.default === b.default && a.options.join("\u0000") === b.options.join("\u0000")

/**
 * Finds the placeholders of a workflow, in order of first appearance. Fails when one is
 * malformed, or when one field name is declared with different kinds, defaults or options.
 */
export const findPlaceholders = (
  workflow: JsonObject,
  field = "workflow_json"
): Result.Result<ReadonlyArray<Placeholder>, ValidationError> => {
  const byField = new Map<string, { parsed: Parsed; locations: Array<PlaceholderLocation> }>()
  const issues: Array<FieldIssue> = []
  for (const [node, def] of Object.entries(workflow)) {
    if (!isJsonObject(def) || !isJsonObject(def["inputs"])) continue
    for (const [input, value] of Object.entries(def["inputs"])) {
      if (typeof value !== "string") continue
      const parsed = parsePlaceholder(value)
      if (parsed === undefined) continue
      const path = `${field}.${node}.inputs.${input}`
      if (Result.isFailure(parsed)) {
        issues.push({ field: path, message: parsed.failure })
        continue
      }
      const p = parsed.success
      const key = fieldName(p)
      const seen = byField.get(key)
      if (seen === undefined) {
        byField.set(key, { parsed: p, locations: [{ node, input }] })
      } else if (!sameDeclaration(seen.parsed, p)) {
        issues.push({
          field: path,
          message: `${value} conflicts with ${placeholderKey(seen.parsed)} declared at node ${JSON.stringify(seen.locations[0]!.node)}: ` +
            `one form field ${key} cannot feed placeholders with different kinds, defaults or options`
        })
      } else {
        seen.locations.push({ node, input })
      }
    }
  }
  if (issues.length > 0) {
    return Result.fail(new ValidationError({ message: `${issues[0]!.field}: ${issues[0]!.message}`, details: issues }))
  }
  return Result.succeed(
    Array.from(byField.values(), ({ locations, parsed }) => ({ ...parsed, locations }))
  )
}

/** A parameter as a request supplies it: a form field and either a string or a file. */
export interface SuppliedParam<F> {
  readonly field: string
  readonly value: { readonly _tag: "Text"; readonly text: string } | { readonly _tag: "File"; readonly file: F }
}

/** How a placeholder gets its value. */
export type ResolvedValue<F> =
  | { readonly _tag: "Value"; readonly value: string }
  | { readonly _tag: "Upload"; readonly file: F }

/** A placeholder and the value it will take. */
export interface ResolvedParam<F> {
  readonly placeholder: Placeholder
  readonly value: ResolvedValue<F>
}

const PARAMETER_VALIDATION_FAILED = "Parameter validation failed"

/** True when a form field name addresses a dynamic parameter (`$...` or `#...`). */
export const isParamField = (field: string): boolean => field.startsWith("$") || field.startsWith("#")

/**
 * Matches supplied parameters against a workflow's placeholders. `inherited` holds a rerun's
 * original `workflow_params`: any placeholder not supplied keeps its value. On create (`inherited`
 * empty) a placeholder with no value and no default is an error. Every problem is a 400
 * "Parameter validation failed" whose details name the parameter.
 */
export const resolveParams = <F>(
  placeholders: ReadonlyArray<Placeholder>,
  supplied: ReadonlyArray<SuppliedParam<F>>,
  inherited: ReadonlyArray<WorkflowParam> = []
): Result.Result<ReadonlyArray<ResolvedParam<F>>, ValidationError> => {
  const issues: Array<FieldIssue> = []
  const byField = new Map(placeholders.map((p) => [fieldName(p), p] as const))
  const given = new Map<string, SuppliedParam<F>["value"]>()
  for (const s of supplied) {
    const p = byField.get(s.field)
    if (given.has(s.field)) {
      issues.push({ field: s.field, message: "is sent more than once" })
    } else if (p === undefined) {
      issues.push({ field: s.field, message: "does not match any placeholder of the workflow" })
    } else if (p.kind === "file" && s.value._tag === "Text") {
      issues.push({ field: s.field, message: `${placeholderKey(p)} needs a file, but a text value was sent` })
    } else if (p.kind !== "file" && s.value._tag === "File") {
      issues.push({ field: s.field, message: `${placeholderKey(p)} needs a text value, but a file was sent` })
    } else if (p.kind === "choice" && s.value._tag === "Text" && p.options.length > 0 && !p.options.includes(s.value.text)) {
      issues.push({ field: s.field, message: `${JSON.stringify(s.value.text)} is not one of ${p.options.map((o) => JSON.stringify(o)).join(", ")}` })
    }
    given.set(s.field, s.value)
  }
  const previous = new Map(inherited)
  const resolved: Array<ResolvedParam<F>> = []
  for (const p of placeholders) {
    const field = fieldName(p)
    const value = given.get(field)
    if (value !== undefined) {
      resolved.push({ placeholder: p, value: value._tag === "File" ? { _tag: "Upload", file: value.file } : { _tag: "Value", value: value.text } })
      continue
    }
    const old = previous.get(placeholderKey(p))
    if (old !== undefined) resolved.push({ placeholder: p, value: { _tag: "Value", value: old } })
    else if (p.default !== undefined) resolved.push({ placeholder: p, value: { _tag: "Value", value: p.default } })
    else issues.push({ field, message: `is required by ${placeholderKey(p)}, which has no default` })
  }
  if (issues.length > 0) {
    const first = issues[0]!
    return Result.fail(new ValidationError({ message: `${PARAMETER_VALIDATION_FAILED}: ${first.field} ${first.message}`, details: issues }))
  }
  return Result.succeed(resolved)
}

/**
 * Replaces every placeholder occurrence with its value. `values` is keyed by `placeholderKey`;
 * placeholders without a value stay as they are. The input is not modified.
 */
export const substitute = (
  workflow: JsonObject,
  placeholders: ReadonlyArray<Placeholder>,
  values: ReadonlyMap<string, string>
): JsonObject => substituteWith(workflow, placeholders, (p) => values.get(placeholderKey(p)))

/**
 * Replaces every placeholder occurrence with the value `valueAt` gives for it there (a JSON
 * value; undefined keeps the placeholder). The input is not modified.
 */
export const substituteWith = (
  workflow: JsonObject,
  placeholders: ReadonlyArray<Placeholder>,
  valueAt: (p: Placeholder, at: PlaceholderLocation) => unknown
): JsonObject => {
  const out: Record<string, unknown> = { ...workflow }
  const copied = new Set<string>()
  for (const p of placeholders) {
    for (const at of p.locations) {
      const value = valueAt(p, at)
      if (value === undefined) continue
      const def = out[at.node] as JsonObject
      if (!copied.has(at.node)) {
        copied.add(at.node)
        out[at.node] = { ...def, inputs: { ...(def["inputs"] as JsonObject) } }
      }
      ;((out[at.node] as JsonObject)["inputs"] as Record<string, unknown>)[at.input] = value
    }
  }
  return out
}
