import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"

class VE extends Schema.TaggedError<VE>()("ValidationError", { message: Schema.String }) {}

class BadRequestError extends Schema.Class<BadRequestError>("BadRequest")(Schema.Struct({
  status: Schema.Literal(400),
  message: Schema.String,
  details: Schema.optionalKey(Schema.Array(Schema.Struct({ field: Schema.String, message: Schema.String })))
}).annotate({ identifier: "BadRequest", description: "The request is invalid; `details` names the fields." }), { httpApiStatus: 400 }) {}

class MethodNotAllowedError extends Schema.Class<MethodNotAllowedError>("MethodNotAllowed")(Schema.Struct({
  status: Schema.Literal(405),
  message: Schema.String
}).annotate({ identifier: "MethodNotAllowed", description: "The path exists, but not with this method; see Allow." }), { httpApiStatus: 405, description: "The path exists, but not with this method; see Allow." }) {}

const isBody = Schema.is(BadRequestError)
const BadRequest = BadRequestError.pipe(
  Schema.decodeTo(Schema.Union([Schema.toType(BadRequestError), VE]), SchemaTransformation.transform({
    decode: (b) => b,
    encode: (e) => isBody(e) ? e : new BadRequestError({ status: 400, message: e.message })
  })),
  HttpApiSchema.status(400)
)
const Ok = Schema.Struct({ id: Schema.String }).annotate({ identifier: "Thing" })
const G = HttpApiGroup.make("workflows")
  .add(HttpApiEndpoint.post("create", "/v1/workflow", { success: Ok.pipe(HttpApiSchema.status(201)), error: [BadRequest, MethodNotAllowedError] }))
  .add(HttpApiEndpoint.get("get", "/v1/workflow", { success: Ok, error: [BadRequest, MethodNotAllowedError] }))
  .add(HttpApiEndpoint.delete("del", "/v1/o/:id", { params: { id: Schema.String }, success: HttpApiSchema.NoContent.annotate({ description: "Success" }) }))

class Api extends HttpApi.make("wes").add(G) {}
const spec = OpenApi.fromApi(Api)
console.log(JSON.stringify(spec.paths, null, 0))
console.log(JSON.stringify(spec.components, null, 0))
