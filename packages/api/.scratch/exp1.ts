import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as OpenApi from "effect/http-api/OpenApi"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"

class FieldIssueX extends Schema.TaggedError<FieldIssueX>()("ValidationError", { message: Schema.String }) {}

class BadRequestError extends Schema.Class<BadRequestError>("BadRequest")({
  status: Schema.Literal(400),
  message: Schema.String,
  details: Schema.optionalKey(Schema.Array(Schema.Struct({ field: Schema.String, message: Schema.String })))
}, { httpApiStatus: 400, description: "The request is invalid; `details` names the fields." }) {}

class MethodNotAllowedError extends Schema.Class<MethodNotAllowedError>("MethodNotAllowed")({
  status: Schema.Literal(405),
  message: Schema.String
}, { httpApiStatus: 405, description: "The path exists, but not with this method; see Allow." }) {}

const isBody = Schema.is(BadRequestError)
const BadRequest = BadRequestError.pipe(
  Schema.decodeTo(Schema.Union([Schema.toType(BadRequestError), FieldIssueX]), SchemaTransformation.transform({
    decode: (b) => b,
    encode: (e) => isBody(e) ? e : new BadRequestError({ status: 400, message: e.message })
  })),
  HttpApiSchema.status(400)
)

const TextField = Schema.String.annotate({ message: "must be a text field, not a file" })
class FormFile { constructor(readonly name: string) {} }
const FilePart = Schema.declare((u: unknown): u is FormFile => u instanceof FormFile, {
  message: "must be a file",
  toCodecJson: () => Schema.link<FormFile>()(Schema.String.annotate({ format: "binary" }), {
    decode: SchemaGetter.forbidden(() => "a file part cannot be decoded from JSON"), encode: SchemaGetter.transform((f: FormFile) => f.name)
  })
})
import * as SchemaGetter from "effect/SchemaGetter"
declare const SchemaGetterFail: never
declare const SchemaGetterFail2: never

const ParamFields = Schema.Record(Schema.TemplateLiteral([Schema.Literals(["$", "#"]), Schema.String]), Schema.Union([Schema.String, FilePart]))
const Form = Schema.StructWithRest(Schema.Struct({
  name: TextField.annotate({ description: "1-200 characters" }),
  workflow_json: Schema.optionalKey(Schema.Union([FilePart, Schema.String]).annotate({ description: "JSON file" })),
}), [ParamFields]).annotate({ description: "Dynamic parameters" }).pipe(HttpApiSchema.asMultipart())

const intParam = (min: number, max: number, message: string) =>
  Schema.String.annotate({ description: "a string to be decoded into a number" }).pipe(
    Schema.decodeTo(Schema.Number.check(Schema.makeFilter((n: number) => Number.isSafeInteger(n) && n >= min && n <= max, { message })), SchemaTransformation.numberFromString)
  )

const G = HttpApiGroup.make("workflows")
  .add(HttpApiEndpoint.post("create", "/v1/workflow", { payload: Form, success: Schema.Struct({ id: Schema.String }).pipe(HttpApiSchema.status(201)), error: [BadRequest, MethodNotAllowedError] })
    .annotate(OpenApi.Summary, "Create"))
  .add(HttpApiEndpoint.get("list", "/v1/workflow", { query: { page: Schema.optional(intParam(1, 100, "must be 1-100")) }, success: Schema.Struct({ total: Schema.Int }), error: [BadRequest, MethodNotAllowedError] }))
  .add(HttpApiEndpoint.get("get", "/v1/workflow/:id", { params: { id: Schema.String.annotate({ format: "uuid" }) }, success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" })).annotate({ description: "SSE" }), error: [BadRequest] }))
  .add(HttpApiEndpoint.get("out", "/v1/o/:id", { params: { id: Schema.String }, success: Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array()).annotate({ description: "file" }) }))
  .add(HttpApiEndpoint.delete("del", "/v1/o/:id", { params: { id: Schema.String }, success: HttpApiSchema.NoContent }))

class Api extends HttpApi.make("wes").add(G) {}
console.log(JSON.stringify(OpenApi.fromApi(Api), null, 1))
