/**
 * Parameters typed by the input they fill. Each text or choice value is converted, at every
 * input it fills, to the type that input declares on the runner (its `/object_info`, kept in the
 * capability summary); on a runner whose types are not known, to the type the placeholder's
 * default or options suggest (Conversion.ts `inferType`); with neither, it stays text. Create
 * checks the values against every eligible runner (a runner they do not convert on is skipped,
 * as one lacking a model), and the prompt posted to a runner carries the values converted by
 * that runner's types.
 */
import * as Result from "effect/Result"
import { ValidationError } from "./Errors.js"
import { isJsonObject, type JsonObject } from "./Json.js"
import { fieldName, findPlaceholders, type Placeholder, placeholderKey, type PlaceholderLocation, substituteWith } from "./Placeholders.js"
import { convertTo, inferType } from "./Conversion.js"
import type { InputType } from "./InputTypes.js"
import type { CapabilitySummary } from "./Summary.js"

/** A text or choice value and one input it fills. */
export interface ParamUse {
  /** The form field: `$name` or `#name`. */
  readonly field: string
  readonly value: string
  readonly node: string
  readonly node_class: string
  readonly input: string
  /** The type the placeholder's default or options suggest (for a runner whose types are unknown). */
  readonly inferred: InputType | undefined
}

/** A value that does not convert to what its input takes on some runner. */
export interface ParamMismatch extends ParamUse {
  /** What the input takes: `a BOOLEAN (true/false, yes/no or 1/0)`. */
  readonly expected: string
}

/** A runner's widget types: node class -> its typed inputs; undefined when not known. */
export type InputTypeIndex = ReadonlyMap<string, (input: string) => InputType | undefined>

/** The lookup of a summary's types, or undefined for a record stored before WES kept them. */
export const indexInputTypes = (s: CapabilitySummary): InputTypeIndex | undefined => {
  if (s.widgets === undefined || s.input_types === undefined) return undefined
  const types = s.input_types
  return new Map(s.widgets.map(([nodeClass, inputs]) => [nodeClass, (input: string) => {
    const found = inputs.find(([name]) => name === input)
    return found === undefined ? undefined : types[found[1]]
  }] as const))
}

/** The type `use`'s input has: the runner's declaration where its types are known, else the inferred one. */
export const typeAt = (types: InputTypeIndex | undefined, use: Pick<ParamUse, "node_class" | "input" | "inferred">): InputType | undefined =>
  types === undefined ? use.inferred : types.get(use.node_class)?.(use.input)

const useAt = (graph: JsonObject, p: Placeholder, at: PlaceholderLocation, value: string): ParamUse => {
  const def = graph[at.node]
  const nodeClass = isJsonObject(def) && typeof def["class_type"] === "string" ? def["class_type"] : ""
  return { field: fieldName(p), value, node: at.node, node_class: nodeClass, input: at.input, inferred: inferType(p) }
}

/** Every input a text or choice value fills (`values` keyed by `placeholderKey`). */
export const paramUses = (graph: JsonObject, placeholders: ReadonlyArray<Placeholder>, values: ReadonlyMap<string, string>): ReadonlyArray<ParamUse> =>
  placeholders.flatMap((p) => {
    const value = values.get(placeholderKey(p))
    return p.kind === "file" || value === undefined ? [] : p.locations.map((at) => useAt(graph, p, at, value))
  })

/** The uses whose value does not convert on a runner with `types`. */
export const mismatchesOn = (types: InputTypeIndex | undefined, uses: ReadonlyArray<ParamUse>): ReadonlyArray<ParamMismatch> =>
  uses.flatMap((use) => {
    const type = typeAt(types, use)
    if (type === undefined) return []
    const converted = convertTo(type, use.value)
    return Result.isFailure(converted) ? [{ ...use, expected: converted.failure }] : []
  })

const issueOf = (m: ParamMismatch) => ({
  field: m.field,
  message: `${JSON.stringify(m.value)} cannot fill node ${JSON.stringify(m.node)} (${m.node_class}.${m.input}), which takes ${m.expected}`
})

/** The 400 for values no eligible runner takes: one detail per distinct problem, the first in the message. */
export const parameterTypeError = (mismatches: ReadonlyArray<ParamMismatch>): ValidationError => {
  const details = [...new Map(mismatches.map(issueOf).map((i) => [`${i.field}\u0000${i.message}`, i])).values()]
  const first = details[0]!
  return new ValidationError({ message: `Parameter validation failed: ${first.field} ${first.message}`, details })
}

/**
 * The prompt for a runner with `types`: the graph with every parameter in place (`params` as
 * `workflow_params` holds them, files already replaced by their upload references), text and
 * choice values converted. Left: the first value that does not convert.
 */
export const typedPrompt = (
  graph: JsonObject,
  params: ReadonlyArray<readonly [string, string]>,
  types: InputTypeIndex | undefined
): Result.Result<JsonObject, ParamMismatch> => {
  const values = new Map(params)
  let wrong: ParamMismatch | undefined
  const prompt = substituteWith(graph, Result.getOrElse(findPlaceholders(graph), () => []), (p, at) => {
    const value = values.get(placeholderKey(p))
    if (value === undefined || p.kind === "file") return value
    const use = useAt(graph, p, at, value)
    const type = typeAt(types, use)
    if (type === undefined) return value
    return Result.getOrElse(convertTo(type, value), (expected) => {
      wrong ??= { ...use, expected }
      return value
    })
  })
  return wrong === undefined ? Result.succeed(prompt) : Result.fail(wrong)
}

/** The message a workflow ends `invalid` with when its runner does not take a value. */
export const describeMismatch = (m: ParamMismatch): string => {
  const issue = issueOf(m)
  return `Parameter validation failed: ${issue.field} ${issue.message}`
}
