/**
 * The /v1 API (and the operator's /admin/v1) as one HttpApi declaration: it gives the server its
 * routes, the OpenAPI document and a typed client. Bodies and errors are the contract's.
 */
import * as HttpApi from "effect/unstable/httpapi/HttpApi"
import * as HttpApiEndpoint from "effect/unstable/httpapi/HttpApiEndpoint"
import * as HttpApiGroup from "effect/unstable/httpapi/HttpApiGroup"
import * as HttpApiMiddleware from "effect/unstable/httpapi/HttpApiMiddleware"
import * as HttpApiSchema from "effect/unstable/httpapi/HttpApiSchema"
import * as HttpApiSecurity from "effect/unstable/httpapi/HttpApiSecurity"
import * as OpenApi from "effect/unstable/httpapi/OpenApi"
import {
  ApiTokenView,
  CreateManagedRunnerRequest,
  CreateRunnerRequest,
  CreateUserRequest,
  CurrentUser as CurrentUserView,
  DescribeParametersRequest,
  IssuedToken,
  IssueTokenRequest,
  ManagedRunnerResponse,
  ManagedRunnerView,
  type Principal,
  RunnerResponse,
  RunnerStatus,
  Template,
  TemplateListItem,
  UpdateManagedRunnerRequest,
  UpdateRunnerRequest,
  UpdateUserRequest,
  Tier,
  User,
  Priority,
  UserDetail,
  DeliveryView,
  WebhookView,
  WorkflowDetail,
  WorkflowOutputView,
  WorkflowParameters,
  WorkflowStatus,
  WorkflowSummary
} from "@wes/core"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import {
  BadRequest,
  ConflictStatus,
  Forbidden,
  HeadersTooLargeError,
  InternalError,
  MethodNotAllowedError,
  NotFoundStatus,
  RateLimitedError,
  Unauthorized,
  Unavailable
} from "./ApiErrors.js"
import { JsonDocument, ParamFields, TextField } from "./Forms.js"

/** The authenticated caller of a /v1 request. */
export class CurrentUser extends Context.Service<CurrentUser, Principal>()("@wes/http-node/CurrentUser") {}

/** Bearer API tokens (`wes_...`), with the contract's three 401 messages. */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: Schema.Union([Unauthorized, Unavailable]),
  provides: CurrentUser,
  security: { bearer: HttpApiSecurity.bearer }
}) {}

/** The operator's token (`WES_ADMIN_TOKEN`); without it configured, /admin/v1 answers 404. */
export class AdminAuthentication extends HttpApiMiddleware.Tag<AdminAuthentication>()("AdminAuthentication", {
  failure: Schema.Union([Unauthorized, NotFoundStatus]),
  security: { adminBearer: HttpApiSecurity.bearer }
}) {}

const Id = Schema.Struct({
  id: Schema.String.annotate({ description: "UUID", jsonSchema: { type: "string", format: "uuid" } })
})

const intParam = (min: number, max: number | undefined, message: string) =>
  Schema.NumberFromString.pipe(
    Schema.int(),
    Schema.greaterThanOrEqualTo(min),
    Schema.lessThanOrEqualTo(max ?? Number.MAX_SAFE_INTEGER)
  ).annotate({ message: () => ({ message, override: true }) })

/** `page` (default 1, minimum 1) and `per_page` (default 10, 1-100). */
export const PageParams = Schema.Struct({
  page: Schema.optional(intParam(1, undefined, "must be an integer of at least 1")),
  per_page: Schema.optional(intParam(1, 100, "must be an integer from 1 to 100"))
})

const created = { status: 201 } as const

/**
 * Request bodies are decoded strictly: every problem is reported (not only the first), and a
 * field the schema does not declare is a 400 naming it, not silently dropped.
 */
const strict = { errors: "all", onExcessProperty: "error" } as const

/** A JSON body, decoded strictly. */
const json = <A, I>(schema: Schema.Schema<A, I>) => schema.annotate({ parseOptions: strict })

/** A multipart form (see Forms.ts), decoded strictly. */
const form = <A, I, R>(schema: Schema.Schema<A, I, R>, description: string) =>
  HttpApiSchema.Multipart(schema.annotate({ description, parseOptions: strict }))

const PARAMS_DOC = "Dynamic parameters: a field `$<name>` (text, or a file part) feeds `$text(<name>)` or `$file(<name>)`; " +
  "a field `#<name>` (text) feeds `#choice(<name>)`. Maximum 50 MB per request."

const JSON_DOC = "JSON file (a text field is accepted too)"

const WEBHOOK_URL_DOC = "Send this workflow's webhooks (status queued, running and every end) to this http(s) URL instead of " +
  "your default endpoint; signed with your webhook secret, so PUT /v1/webhook first."

export const CreateWorkflowForm = form(Schema.Struct({
  name: TextField.annotate({ description: "1-200 characters" }),
  workflow_json: Schema.optional(JsonDocument.annotate({ description: `${JSON_DOC}: the workflow in ComfyUI API format` })),
  template_id: Schema.optional(TextField.annotate({ description: "Start from this template instead of workflow_json" })),
  tags: Schema.optional(TextField.annotate({ description: "Comma-separated tags; used to select a runner" })),
  priority: Schema.optional(Priority.annotate({
    description: "low, normal (the default) or high, up to the tier's max_priority; on its runner higher priorities go first"
  })),
  webhook_url: Schema.optional(TextField.annotate({ description: WEBHOOK_URL_DOC }))
}, ParamFields), PARAMS_DOC)

export const RerunWorkflowForm = form(
  Schema.Struct({
    webhook_url: Schema.optional(TextField.annotate({ description: `${WEBHOOK_URL_DOC} Not sent: the original's.` }))
  }, ParamFields),
  `Dynamic parameters; those not sent keep the original's values. ${PARAMS_DOC}`
)

export const CreateTemplateForm = form(Schema.Struct({
  name: TextField.annotate({ description: "1-100 characters" }),
  description: TextField.annotate({ description: "1-500 characters" }),
  body: JsonDocument.annotate({ description: `${JSON_DOC}: the workflow definition` })
}), "A template: a reusable workflow definition.")

export const UpdateTemplateForm = form(Schema.Struct({
  name: Schema.optional(TextField),
  description: Schema.optional(TextField),
  body: Schema.optional(JsonDocument.annotate({ description: JSON_DOC }))
}), "Omitted fields keep their values.")

/** `Last-Event-ID`: resume after this event (blank: from now). */
const LastEventId = Schema.transform(
  Schema.String.pipe(Schema.pattern(/^\s*(\d{1,15})?\s*$/, { message: () => "must be a non-negative integer (an event id)" })),
  Schema.UndefinedOr(Schema.Number),
  { strict: true, decode: (s) => (s.trim() === "" ? undefined : Number(s.trim())), encode: (n) => (n === undefined ? "" : String(n)) }
).annotate({ description: "Resume after this event id (what the stream sent as `id:`)" })

const sse = Schema.String.pipe(HttpApiSchema.withEncoding({ kind: "Text", contentType: "text/event-stream" })).annotate({
  description: "Server-sent events: `status`, `queue`, `progress`, `executing`, `output`, then `done`. " +
    "`id:` is the workflow's event sequence; send `Last-Event-ID` to resume."
})

const fileBody = Schema.Uint8ArrayFromSelf.pipe(HttpApiSchema.withEncoding({ kind: "Uint8Array", contentType: "application/octet-stream" }))
  .annotate({ description: "The output file, with its content type" })

export class UserGroup extends HttpApiGroup.make("user")
  .add(HttpApiEndpoint.get("get", "/v1/user").addSuccess(CurrentUserView)
    .annotate(OpenApi.Summary, "The caller: tier, limits and usage"))
  .middleware(Authentication)
{}

export class WorkflowsGroup extends HttpApiGroup.make("workflows")
  .add(HttpApiEndpoint.post("create", "/v1/workflow").setPayload(CreateWorkflowForm).addSuccess(WorkflowSummary, created)
    .addError(BadRequest).addError(Forbidden).addError(NotFoundStatus)
    .annotate(OpenApi.Summary, "Create a workflow (from workflow_json or template_id)"))
  .add(HttpApiEndpoint.post("parameters", "/v1/workflow/parameters").setPayload(json(DescribeParametersRequest))
    .addSuccess(WorkflowParameters).addError(BadRequest).addError(NotFoundStatus)
    .annotate(OpenApi.Summary, "Describe a definition's parameters: the type each value is converted to on create"))
  .add(HttpApiEndpoint.get("list", "/v1/workflow").setUrlParams(Schema.Struct({
    ...PageParams.fields,
    status: Schema.optional(WorkflowStatus),
    tag: Schema.optional(Schema.String)
  })).addSuccess(Schema.Struct({ workflows: Schema.Array(WorkflowSummary), total: Schema.Int })).addError(BadRequest)
    .annotate(OpenApi.Summary, "List workflows, newest first"))
  .add(HttpApiEndpoint.get("get", "/v1/workflow/:id").setPath(Id).addSuccess(WorkflowDetail).addError(NotFoundStatus)
    .annotate(OpenApi.Summary, "Get a workflow (detail form)"))
  .add(HttpApiEndpoint.post("rerun", "/v1/workflow/:id/rerun").setPath(Id).setPayload(RerunWorkflowForm)
    .addSuccess(WorkflowSummary, created).addError(BadRequest).addError(Forbidden).addError(NotFoundStatus)
    .annotate(OpenApi.Summary, "Rerun a workflow with new parameter values"))
  .add(HttpApiEndpoint.post("cancel", "/v1/workflow/:id/cancel").setPath(Id).addSuccess(WorkflowSummary)
    .addError(NotFoundStatus).addError(ConflictStatus).annotate(OpenApi.Summary, "Cancel an unfinished workflow"))
  .add(HttpApiEndpoint.get("subscribe", "/v1/workflow/:id/subscribe").setPath(Id)
    .setHeaders(Schema.Struct({ "last-event-id": Schema.optional(LastEventId) })).addSuccess(sse)
    .addError(BadRequest).addError(NotFoundStatus).annotate(OpenApi.Summary, "Follow a workflow's progress (SSE)"))
  .add(HttpApiEndpoint.get("outputs", "/v1/workflow/:id/outputs").setPath(Id)
    .addSuccess(Schema.Struct({ outputs: Schema.Array(WorkflowOutputView) })).addError(NotFoundStatus)
    .annotate(OpenApi.Summary, "List a workflow's output files"))
  .add(HttpApiEndpoint.get("output", "/v1/workflow/:id/outputs/:output_id")
    .setPath(Schema.Struct({ id: Schema.String, output_id: Schema.String })).addSuccess(fileBody).addError(NotFoundStatus)
    .annotate(OpenApi.Summary, "Download an output file"))
  .add(HttpApiEndpoint.get("deliveries", "/v1/workflow/:id/deliveries").setPath(Id)
    .addSuccess(Schema.Struct({ deliveries: Schema.Array(DeliveryView) })).addError(NotFoundStatus)
    .annotate(OpenApi.Summary, "The workflow's webhook deliveries, oldest first, with their attempts"))
  .add(HttpApiEndpoint.post("retryDelivery", "/v1/workflow/:id/deliveries/:delivery_id/retry")
    .setPath(Schema.Struct({ id: Schema.String, delivery_id: Schema.String })).addSuccess(DeliveryView).addError(NotFoundStatus)
    .annotate(OpenApi.Summary, "Send a webhook delivery again now (same webhook-id; retried for another 24 h)"))
  .middleware(Authentication)
{}

const WebhookUrl = Schema.Struct({ url: Schema.String.annotate({ description: "http(s) URL receiving the webhooks" }) })

export class WebhookGroup extends HttpApiGroup.make("webhook")
  .add(HttpApiEndpoint.put("put", "/v1/webhook").setPayload(json(WebhookUrl)).addSuccess(WebhookView).addError(BadRequest)
    .annotate(OpenApi.Summary, "Set your default webhook endpoint")
    .annotate(OpenApi.Description, "A new endpoint answers with its whole signing secret (`whsec_...`), shown this once; " +
      "changing the URL of an existing one keeps its secret (masked in the answer)."))
  .add(HttpApiEndpoint.get("get", "/v1/webhook").addSuccess(WebhookView).addError(NotFoundStatus)
    .annotate(OpenApi.Summary, "Your webhook endpoint (secret masked)"))
  .add(HttpApiEndpoint.del("delete", "/v1/webhook").addSuccess(HttpApiSchema.NoContent).addError(NotFoundStatus)
    .annotate(OpenApi.Summary, "Remove your webhook endpoint and its secrets"))
  .add(HttpApiEndpoint.post("rotate", "/v1/webhook/rotate-secret").addSuccess(WebhookView).addError(NotFoundStatus)
    .annotate(OpenApi.Summary, "A new signing secret (shown once); the old one keeps signing alongside for 24 h"))
  .middleware(Authentication)
{}

export class TemplatesGroup extends HttpApiGroup.make("templates")
  .add(HttpApiEndpoint.post("create", "/v1/template").setPayload(CreateTemplateForm).addSuccess(Template, created)
    .addError(BadRequest).addError(Forbidden).annotate(OpenApi.Summary, "Create a template"))
  .add(HttpApiEndpoint.get("list", "/v1/template").setUrlParams(PageParams)
    .addSuccess(Schema.Struct({ templates: Schema.Array(TemplateListItem), total: Schema.Int })).addError(BadRequest)
    .annotate(OpenApi.Summary, "List templates (without bodies), newest first"))
  .add(HttpApiEndpoint.get("get", "/v1/template/:id").setPath(Id).addSuccess(Template).addError(NotFoundStatus)
    .annotate(OpenApi.Summary, "Get a template"))
  .add(HttpApiEndpoint.put("update", "/v1/template/:id").setPath(Id).setPayload(UpdateTemplateForm).addSuccess(Template)
    .addError(BadRequest).addError(NotFoundStatus).annotate(OpenApi.Summary, "Update a template"))
  .add(HttpApiEndpoint.del("delete", "/v1/template/:id").setPath(Id).addSuccess(HttpApiSchema.NoContent)
    .addError(NotFoundStatus).annotate(OpenApi.Summary, "Delete a template"))
  .middleware(Authentication)
{}

const RunnerList = Schema.Struct({ runners: Schema.Array(RunnerResponse), total: Schema.Int })

export class RunnersGroup extends HttpApiGroup.make("runners")
  .add(HttpApiEndpoint.post("create", "/v1/runner").setPayload(json(CreateRunnerRequest)).addSuccess(RunnerResponse, created)
    .addError(BadRequest).addError(Forbidden).annotate(OpenApi.Summary, "Register a runner (its endpoint is probed)"))
  .add(HttpApiEndpoint.get("list", "/v1/runner").setUrlParams(Schema.Struct({ ...PageParams.fields, status: Schema.optional(RunnerStatus) }))
    .addSuccess(RunnerList).addError(BadRequest).annotate(OpenApi.Summary, "List runners, newest first"))
  .add(HttpApiEndpoint.get("get", "/v1/runner/:id").setPath(Id).addSuccess(RunnerResponse).addError(NotFoundStatus)
    .annotate(OpenApi.Summary, "Get a runner"))
  .add(HttpApiEndpoint.patch("update", "/v1/runner/:id").setPath(Id).setPayload(json(UpdateRunnerRequest)).addSuccess(RunnerResponse)
    .addError(BadRequest).addError(NotFoundStatus).annotate(OpenApi.Summary, "Update a runner (omitted fields keep their values)"))
  .add(HttpApiEndpoint.put("replace", "/v1/runner/:id").setPath(Id).setPayload(json(UpdateRunnerRequest)).addSuccess(RunnerResponse)
    .addError(BadRequest).addError(NotFoundStatus).annotate(OpenApi.Summary, "Update a runner (same as PATCH)"))
  .add(HttpApiEndpoint.del("delete", "/v1/runner/:id").setPath(Id).addSuccess(HttpApiSchema.NoContent)
    .addError(NotFoundStatus).addError(ConflictStatus).annotate(OpenApi.Summary, "Delete a runner without unfinished workflows"))
  .add(HttpApiEndpoint.get("history", "/v1/runner/:id/history").setPath(Id).addSuccess(Schema.Array(WorkflowSummary))
    .addError(NotFoundStatus).annotate(OpenApi.Summary, "The caller's 10 newest workflows on this runner"))
  .middleware(Authentication)
{}

export class ManagedRunnersGroup extends HttpApiGroup.make("managedRunners")
  .add(HttpApiEndpoint.get("list", "/v1/managed-runner").setUrlParams(PageParams)
    .addSuccess(Schema.Struct({ runners: Schema.Array(ManagedRunnerView), total: Schema.Int }))
    .addError(BadRequest).addError(Forbidden).annotate(OpenApi.Summary, "Active managed runners of the caller's tier"))
  .add(HttpApiEndpoint.get("history", "/v1/managed-runner/:id/history").setPath(Id).addSuccess(Schema.Array(WorkflowSummary))
    .addError(Forbidden).addError(NotFoundStatus).annotate(OpenApi.Summary, "The caller's 10 newest workflows on this managed runner"))
  .middleware(Authentication)
{}

const Health = Schema.Struct({ status: Schema.Literal("ok") })

export class SystemGroup extends HttpApiGroup.make("system")
  .add(HttpApiEndpoint.get("healthz", "/healthz").addSuccess(Health).annotate(OpenApi.Summary, "Liveness"))
  .add(HttpApiEndpoint.get("readyz", "/readyz").addSuccess(Health).addError(Unavailable)
    .annotate(OpenApi.Summary, "Readiness: the store answers and the server is not shutting down"))
{}

const TokenId = Schema.Struct({ id: Schema.String })

export class AdminGroup extends HttpApiGroup.make("admin")
  .add(HttpApiEndpoint.post("createUser", "/admin/v1/users").setPayload(json(CreateUserRequest)).addSuccess(User, created).addError(BadRequest))
  .add(HttpApiEndpoint.get("listUsers", "/admin/v1/users")
    .setUrlParams(Schema.Struct({ ...PageParams.fields, tier: Schema.optional(Tier) }))
    .addSuccess(Schema.Struct({ users: Schema.Array(User), total: Schema.Int })).addError(BadRequest))
  .add(HttpApiEndpoint.get("getUser", "/admin/v1/users/:id").setPath(Id).addSuccess(UserDetail))
  .add(HttpApiEndpoint.patch("updateUser", "/admin/v1/users/:id").setPath(Id).setPayload(json(UpdateUserRequest)).addSuccess(User)
    .addError(BadRequest))
  .add(HttpApiEndpoint.post("issueToken", "/admin/v1/users/:id/tokens").setPath(Id).setPayload(json(IssueTokenRequest))
    .addSuccess(IssuedToken, created).addError(BadRequest))
  .add(HttpApiEndpoint.get("listTokens", "/admin/v1/users/:id/tokens").setPath(Id).addSuccess(Schema.Array(ApiTokenView)))
  .add(HttpApiEndpoint.del("revokeToken", "/admin/v1/tokens/:id").setPath(TokenId).addSuccess(HttpApiSchema.NoContent))
  .add(HttpApiEndpoint.post("createManagedRunner", "/admin/v1/managed-runners").setPayload(json(CreateManagedRunnerRequest))
    .addSuccess(ManagedRunnerResponse, created).addError(BadRequest))
  .add(HttpApiEndpoint.get("listManagedRunners", "/admin/v1/managed-runners")
    .setUrlParams(Schema.Struct({ ...PageParams.fields, status: Schema.optional(RunnerStatus) }))
    .addSuccess(Schema.Struct({ runners: Schema.Array(ManagedRunnerResponse), total: Schema.Int })).addError(BadRequest))
  .add(HttpApiEndpoint.get("getManagedRunner", "/admin/v1/managed-runners/:id").setPath(Id).addSuccess(ManagedRunnerResponse))
  .add(HttpApiEndpoint.patch("updateManagedRunner", "/admin/v1/managed-runners/:id").setPath(Id)
    .setPayload(json(UpdateManagedRunnerRequest)).addSuccess(ManagedRunnerResponse).addError(BadRequest))
  .add(HttpApiEndpoint.del("deleteManagedRunner", "/admin/v1/managed-runners/:id").setPath(Id)
    .addSuccess(HttpApiSchema.NoContent).addError(ConflictStatus))
  .addError(NotFoundStatus)
  .middleware(AdminAuthentication)
  .annotate(OpenApi.Exclude, true)
{}

type SpecNode = { [key: string]: unknown }
const isNode = (u: unknown): u is SpecNode => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * HttpApi seeds every API with its own decode-error body; WES never sends it (the error middleware
 * answers the contract's 400 instead), so the document must not promise it.
 */
export const withoutDecodeErrorBody = (spec: Record<string, unknown>): Record<string, unknown> => {
  const isDecodeRef = (u: unknown) => isNode(u) && typeof u["$ref"] === "string" && u["$ref"].endsWith("/HttpApiDecodeError")
  const paths = isNode(spec["paths"]) ? spec["paths"] : {}
  for (const item of Object.values(paths)) {
    if (!isNode(item)) continue
    for (const op of Object.values(item)) {
      const content = isNode(op) && isNode(op["responses"]) && isNode(op["responses"]["400"]) ? op["responses"]["400"]["content"] : undefined
      const media = isNode(content) ? content["application/json"] : undefined
      if (!isNode(media) || !isNode(media["schema"])) continue
      const schema = media["schema"]
      if (Array.isArray(schema["anyOf"])) {
        const rest = schema["anyOf"].filter((m) => !isDecodeRef(m))
        media["schema"] = rest.length === 1 ? rest[0] : { ...schema, anyOf: rest }
      }
      if (isNode(op) && isNode(op["responses"]) && isNode(op["responses"]["400"])) {
        op["responses"]["400"]["description"] = "The request is invalid; `details` names the fields."
      }
    }
  }
  const components = isNode(spec["components"]) && isNode(spec["components"]["schemas"]) ? spec["components"]["schemas"] : undefined
  if (components !== undefined) {
    delete components["HttpApiDecodeError"]
    delete components["Issue"]
    delete components["PropertyKey"]
  }
  return spec
}

/**
 * Effect writes the key pattern of a record inside a struct (the forms' `$`/`#` parameters) as
 * `propertyNames`, which in JSON Schema also binds the declared fields, under an empty
 * `patternProperties` key; this puts the pattern where JSON Schema means it.
 */
export const withKeyPatterns = (spec: Record<string, unknown>): Record<string, unknown> => {
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit)
    if (!isNode(node)) return
    const patterns = node["patternProperties"]
    const names = node["propertyNames"]
    if (isNode(patterns) && isNode(names) && typeof names["pattern"] === "string" && "" in patterns) {
      node["patternProperties"] = { [names["pattern"]]: patterns[""] }
      delete node["propertyNames"]
    }
    Object.values(node).forEach(visit)
  }
  visit(spec)
  return spec
}

/** The whole API. Errors every operation may answer are declared once here. */
export class WesApi extends HttpApi.make("wes")
  .add(UserGroup)
  .add(WorkflowsGroup)
  .add(WebhookGroup)
  .add(TemplatesGroup)
  .add(RunnersGroup)
  .add(ManagedRunnersGroup)
  .add(SystemGroup)
  .add(AdminGroup)
  .addError(BadRequest)
  .addError(Unauthorized)
  .addError(NotFoundStatus)
  .addError(MethodNotAllowedError)
  .addError(RateLimitedError)
  .addError(HeadersTooLargeError)
  .addError(InternalError)
  .addError(Unavailable)
  .annotate(OpenApi.Transform, (spec) => withKeyPatterns(withoutDecodeErrorBody(spec)))
  .annotate(OpenApi.Title, "WES — Workflow Execution Service")
  .annotate(OpenApi.Version, "1.0.0")
  .annotate(OpenApi.Description,
    "Runs ComfyUI workflows on remote runners. Every /v1 operation takes `Authorization: Bearer <token>`. " +
      "Rate limit: 40 requests per 10 s per client IP, then 429 for a 10 s cooldown.")
{}
