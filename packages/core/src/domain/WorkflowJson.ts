/**
 * Workflow definitions must be ComfyUI API format: an object of node id -> `{class_type, inputs}`,
 * where a 2-element array input is a link `[source_node_id, output_index]`. A UI-format export
 * (top-level `nodes` and `links` arrays) is rejected with a message that says how to export in
 * API format; any other shape is rejected naming what is wrong.
 */
import * as Result from "effect/Result"
import { type FieldIssue, ValidationError } from "./Errors.js"
import { depthMessage, isJsonObject, JSON_MAX_BYTES, utf8Length, JSON_MAX_DEPTH, type JsonObject, nestsDeeperThan, sizeMessage, textNestsDeeperThan } from "./Json.js"

const MAX_REPORTED = 10

/** Message for a UI-format workflow. */
export const UI_FORMAT_MESSAGE =
  "workflow is in ComfyUI's UI (editor) format; export it in API format instead " +
  "(in ComfyUI: Workflow > Export (API), or enable dev mode and use Save (API Format)) and send that file"

/**
 * Validates an already-parsed workflow definition. `field` names the request field in errors
 * (`workflow_json` for workflows, `body` for templates).
 */
export const validateWorkflowJson = (
  value: unknown,
  field = "workflow_json"
): Result.Result<JsonObject, ValidationError> => {
  const fail = (issues: ReadonlyArray<FieldIssue>) => {
    const first = issues[0]!
    const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : ""
    return Result.fail(new ValidationError({ message: `${first.field}: ${first.message}${more}`, details: issues }))
  }
  if (!isJsonObject(value)) {
    const what = Array.isArray(value) ? "an array" : value === null ? "null" : `a ${typeof value}`
    return fail([{ field, message: `must be a JSON object of node id -> {class_type, inputs} (ComfyUI API format), got ${what}` }])
  }
  if (nestsDeeperThan(value, JSON_MAX_DEPTH)) return fail([{ field, message: depthMessage() }])
  if (Array.isArray(value["nodes"]) || Array.isArray(value["links"])) {
    return fail([{ field, message: UI_FORMAT_MESSAGE }])
  }
  const ids = Object.keys(value)
  if (ids.length === 0) return fail([{ field, message: "has no nodes" }])

  const issues: Array<FieldIssue> = []
  const report = (path: string, message: string) => {
    if (issues.length < MAX_REPORTED) issues.push({ field: `${field}.${path}`, message })
  }
  for (const id of ids) {
    const node = value[id]
    if (!isJsonObject(node)) {
      report(id, `node ${JSON.stringify(id)} must be an object with class_type and inputs`)
      continue
    }
    const classType = node["class_type"]
    if (typeof classType !== "string" || classType.trim() === "") {
      report(`${id}.class_type`, `node ${JSON.stringify(id)} has no class_type (a non-empty string)`)
    }
    const inputs = node["inputs"]
    if (!isJsonObject(inputs)) {
      report(`${id}.inputs`, `node ${JSON.stringify(id)} has no inputs object`)
      continue
    }
    for (const [name, input] of Object.entries(inputs)) {
      if (!Array.isArray(input) || input.length !== 2) continue
      const [source, slot] = input as [unknown, unknown]
      const where = `node ${JSON.stringify(id)} input ${JSON.stringify(name)}`
      if (typeof source !== "string") {
        report(`${id}.inputs.${name}`, `${where} is a link whose source node id is not a string (write ["${String(source)}", ${String(slot)}])`)
      } else if (!(source in value)) {
        report(`${id}.inputs.${name}`, `${where} links to node ${JSON.stringify(source)}, which does not exist`)
      } else if (typeof slot !== "number" || !Number.isInteger(slot) || slot < 0) {
        report(`${id}.inputs.${name}`, `${where} is a link whose output index is not a non-negative integer`)
      }
    }
  }
  return issues.length > 0 ? fail(issues) : Result.succeed(value)
}

/** Refuses JSON text over the size or depth bound (`JSON_MAX_BYTES`, `JSON_MAX_DEPTH`) before it is parsed. */
export const checkJsonText = (text: string, field: string): Result.Result<string, ValidationError> => {
  if (utf8Length(text) > JSON_MAX_BYTES) return Result.fail(ValidationError.field(field, sizeMessage()))
  if (textNestsDeeperThan(text, JSON_MAX_DEPTH)) return Result.fail(ValidationError.field(field, depthMessage()))
  return Result.succeed(text)
}

/** Parses JSON text, then validates it as a workflow definition. */
export const parseWorkflowJson = (
  text: string,
  field = "workflow_json"
): Result.Result<JsonObject, ValidationError> => {
  const bounds = checkJsonText(text, field)
  if (Result.isFailure(bounds)) return Result.fail(bounds.failure)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e)
    return Result.fail(ValidationError.field(field, `is not valid JSON (${reason})`))
  }
  return validateWorkflowJson(parsed, field)
}
