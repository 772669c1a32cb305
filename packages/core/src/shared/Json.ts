/** JSON values as they travel through the service. */
import * as Schema from "effect/Schema"

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
  identifier: "JsonObject",
  description: "A JSON object",
  jsonSchema: { type: "object", required: [], properties: {}, additionalProperties: true },
  arbitrary: () => (fc) =>
    fc.dictionary(fc.oneof({ weight: 9, arbitrary: fc.string() }, { weight: 1, arbitrary: fc.constant("__proto__") }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 5 })
})
export type JsonObject = typeof JsonObject.Type

/** A timestamp: an ISO 8601 string on the wire, a `DateTime.Utc` inside. */
export const Timestamp = Schema.DateTimeUtc.annotations({
  identifier: "Timestamp",
  description: "ISO 8601 timestamp (UTC)"
})
