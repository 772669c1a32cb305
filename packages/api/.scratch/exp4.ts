import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
const LastEventId = Schema.String.check(
  Schema.isPattern(/^\s*(\d{1,15})?\s*$/, { message: "must be a non-negative integer (an event id)" })
).annotate({ description: "Resume after" }).pipe(
  Schema.decodeTo(
    Schema.UndefinedOr(Schema.Number),
    SchemaTransformation.transform({
      decode: (s: string) => (s.trim() === "" ? undefined : Number(s.trim())),
      encode: (n: number | undefined) => (n === undefined ? "" : String(n))
    })
  )
)
const H = Schema.Struct({ "last-event-id": Schema.optional(LastEventId) })
const C = Schema.toCodecStringTree(H)
console.log(JSON.stringify(Schema.toJsonSchemaDocument(C)))
console.log(String(Schema.decodeUnknownExit(C)({ "last-event-id": "abc" })))
console.log(String(Schema.decodeUnknownExit(C)({ "last-event-id": " 12 " })))
console.log(String(Schema.decodeUnknownExit(C)({ "last-event-id": "" })))
console.log(String(Schema.decodeUnknownExit(C)({})))
