/** JSON values as they travel through the service. */
import * as Schema from "effect/Schema"

/** A JSON object (the contract's `object`): string keys, any JSON values. */
export const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
  identifier: "JsonObject",
  description: "A JSON object"
})
export type JsonObject = typeof JsonObject.Type

/** True for a plain JSON object (not null, not an array). */
export const isJsonObject = (u: unknown): u is JsonObject =>
  typeof u === "object" && u !== null && !Array.isArray(u)

/** A timestamp: an ISO 8601 string on the wire, a `DateTime.Utc` inside. */
export const Timestamp = Schema.DateTimeUtc.annotations({
  identifier: "Timestamp",
  description: "ISO 8601 timestamp (UTC)"
})
