import * as Schema from "effect/Schema"
const S = Schema.Struct({ a: Schema.optional(Schema.String), b: Schema.optionalKey(Schema.String) })
const J = Schema.toCodecJson(S)
console.log(String(Schema.decodeUnknownExit(J)({ a: null })))
console.log(String(Schema.decodeUnknownExit(J)({ b: null })))
console.log(JSON.stringify(Schema.encodeSync(J)({ a: undefined })))
console.log(String(Schema.decodeUnknownExit(S)({ a: null })))
