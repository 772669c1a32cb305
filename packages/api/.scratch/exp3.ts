import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import { Priority } from "@wes/core"
import { JsonDocument } from "../src/Forms.js"

const Form = Schema.Struct({
  a: Schema.optionalKey(Priority).annotateKey({ description: "key-annotated" }),
  b: Schema.optionalKey(Priority.annotate({ identifier: undefined, description: "identifier cleared" })),
  c: Schema.optionalKey(JsonDocument).annotateKey({ description: "json doc key" }),
  d: Schema.optionalKey(JsonDocument.annotate({ description: "json doc annotate" })),
  e: Schema.optionalKey(Priority),
}).pipe(HttpApiSchema.asMultipart())
const G = HttpApiGroup.make("g").add(HttpApiEndpoint.post("create", "/x", { payload: Form }))
class Api extends HttpApi.make("wes").add(G) {}
const spec = OpenApi.fromApi(Api)
console.log(JSON.stringify(spec.paths["/x"].post.requestBody, null, 1))
console.log(JSON.stringify(spec.components.schemas, null, 0))
