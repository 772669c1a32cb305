import * as Schema from "effect/Schema"
import { NotFound } from "@wes/core"
import { NotFoundError, NotFoundStatus } from "../src/index.js"
const e = NotFound.workflow()
console.log("is body?", Schema.is(Schema.toType(NotFoundError))(e), Schema.is(NotFoundError)(e))
console.log(String(Schema.encodeUnknownExit(NotFoundStatus)(e)))
console.log(String(Schema.encodeUnknownExit(NotFoundStatus)(new NotFoundError({ status: 404, message: "x" }))))
console.log(String(Schema.encodeUnknownExit(Schema.toCodecJson(NotFoundStatus))(e)))
