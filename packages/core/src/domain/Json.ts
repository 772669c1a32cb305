/** JSON values as they travel through the service. */
import * as Schema from "effect/Schema"
import * as SchemaGetter from "effect/SchemaGetter"
import * as SchemaTransformation from "effect/SchemaTransformation"

/** True for a plain JSON object (not null, not an array). */
export const isJsonObject = (u: unknown): u is { readonly [key: string]: unknown } =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * A JSON object (the contract's `object`): string keys, any JSON values. Declared rather than a
 * `Schema.Record`, so decoding and encoding hand back the very object: a Record rebuilds it by
 * assignment, and a key named `__proto__` (an own key after `JSON.parse`) then vanishes and turns
 * into the copy's prototype. A user's workflow JSON comes back exactly as sent, on every path
 * (docs/decisions.md), and encoding does not walk it.
 */
export const JsonObject = Schema.declare(isJsonObject, {
  // Its JSON form is the object itself: no codec rebuilds (or walks) it.
  toCodecJson: () => undefined,
  toCodecArbitrary: () =>
    Schema.link<{ readonly [key: string]: unknown }>()(Schema.Record(Schema.String, Schema.Json), {
      decode: SchemaGetter.passthroughSubtype(),
      encode: SchemaGetter.passthroughSupertype()
    })
}).check(Schema.makeFilter(() => true, {
  // What the API's documentation says it is (a declaration has no JSON Schema of its own). The
  // identifier and description go on this last check: a schema's annotations are its last check's.
  identifier: "JsonObject",
  description: "A JSON object",
  toJsonSchema: () => ({ type: "object", required: [], properties: {}, additionalProperties: true })
}))
export type JsonObject = typeof JsonObject.Type

/**
 * A timestamp: an ISO 8601 string on the wire, a `DateTime.Utc` inside. A string that is not
 * one is a 400 "must be an ISO 8601 timestamp" (`message`: what a failed decoding says). The
 * wire side carries the identifier and description too: the OpenAPI document shows that side
 * (as the `Timestamp` component).
 */
const TIMESTAMP = { identifier: "Timestamp", description: "ISO 8601 timestamp (UTC)" } as const
export const Timestamp = Schema.String.annotate(TIMESTAMP).pipe(
  Schema.decodeTo(Schema.DateTimeUtc, SchemaTransformation.dateTimeUtcFromString)
).annotate({ ...TIMESTAMP, message: "must be an ISO 8601 timestamp" })

/**
 * An integer (a safe one), documented as the contract's `Int` component: `{type: integer}`
 * (Effect's own `isInt` also writes the safe-integer bounds).
 */
export const Int = Schema.Number.check(Schema.isInt({
  identifier: "Int",
  title: "int",
  description: "an integer",
  toJsonSchema: () => ({ type: "integer" })
}))

/** A non-negative integer, documented as the contract has it (`nonNegative`, minimum 0). */
export const NonNegativeInt = Schema.Number.check(
  Schema.isInt({ toJsonSchema: () => ({ type: "integer" }) }),
  Schema.isGreaterThanOrEqualTo(0, { title: "nonNegative", description: "a non-negative number" })
)

/**
 * Bounds on a JSON document a user sends (a workflow, a template body, a request body): deeper
 * nesting or more bytes is a 400 naming the limit. A ComfyUI workflow is a few levels deep (node,
 * inputs, value); the bounds keep every later step (storage, encoding, the runner) far from the
 * recursion limits of `JSON.stringify` and friends.
 */
export const JSON_MAX_DEPTH = 64
export const JSON_MAX_BYTES = 5 * 1024 * 1024

export const depthMessage = (max = JSON_MAX_DEPTH) => `is nested deeper than ${max} levels (the limit is ${max})`
export const sizeMessage = (max = JSON_MAX_BYTES) => `is larger than ${max / (1024 * 1024)} MB (the limit is ${max} bytes)`

/** The UTF-8 size of a string, in bytes (without encoding it). */
export const utf8Length = (text: string): number => {
  let bytes = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) bytes += 1
    else if (c < 0x800) bytes += 2
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      bytes += 4
      i++
    } else bytes += 3
  }
  return bytes
}

/**
 * Whether JSON text nests arrays and objects deeper than `max`, found by one pass over the
 * characters (strings skipped), before anything parses it.
 */
export const textNestsDeeperThan = (text: string, max: number): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) i++ // backslash: skip the escaped character
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 123 || c === 91) {
      if (++depth > max) return true
    } else if (c === 125 || c === 93) depth--
  }
  return false
}

/** Whether a parsed value nests arrays and objects deeper than `max` (an explicit stack, no recursion). */
export const nestsDeeperThan = (value: unknown, max: number): boolean => {
  const stack: Array<readonly [unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [v, d] = stack.pop()!
    if (typeof v !== "object" || v === null) continue
    if (d + 1 > max) return true
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === "object" && child !== null) stack.push([child, d + 1])
    }
  }
  return false
}
