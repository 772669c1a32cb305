/**
 * The /v1 API (and the operator's /admin/v1) as one HttpApi declaration: it gives the server its
 * routes, the OpenAPI document and a typed client. Bodies and errors are the contract's.
 */
import * as HttpApi from "effect/http-api/HttpApi"
import * as HttpApiEndpoint from "effect/http-api/HttpApiEndpoint"
import * as HttpApiGroup from "effect/http-api/HttpApiGroup"
import * as HttpApiMiddleware from "effect/http-api/HttpApiMiddleware"
import * as HttpApiSchema from "effect/http-api/HttpApiSchema"
import * as HttpApiSecurity from "effect/http-api/HttpApiSecurity"
import * as OpenApi from "effect/http-api/OpenApi"
import {
  ApiTokenView,
  CreateManagedRunnerRequest,
  CreateRunnerRequest,
  CreateUserRequest,
  CurrentUser as CurrentUserView,
  DeliveryView,
  DescribeParametersRequest,
  IssuedRunnerToken,
  IssuedToken,
  Int,
  IssueTokenRequest,
  ManagedRunnerResponse,
  ManagedRunnerView,
  MAX_MODEL_FILES,
  type Principal,
  Priority,
  RunnerResponse,
  RunnerStatus,
  RunnerTokenView,
  RunnerView,
  Template,
  TemplateListItem,
  Tier,
  UpdateManagedRunnerRequest,
  UpdateRunnerRequest,
  UpdateUserRequest,
  User,
  UserDetail,
  WebhookView,
  WorkflowDetail,
  WorkflowOutputView,
  WorkflowParameters,
  WorkflowStatus,
  withMaskedHeaders,
  WorkflowSummary
} from "@wes/core"
import * as Context from "effect/Context"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import {
  BadRequest,
  ConflictStatus,
  Forbidden,
  Gone,
  HeadersTooLargeError,
  InternalError,
  MethodNotAllowedError,
  NotFoundStatus,
  RangeNotSatisfiableError,
  RateLimitedError,
  Unauthorized,
  Unavailable
} from "./ApiErrors.js"
import { jsonDocument, ParamFields, TextField } from "./Forms.js"
import { withBinaryBodyDescriptions, withParameterDescriptions } from "./OpenApiDocument.js"

/** The authenticated caller of a /v1 request. */
export class CurrentUser extends Context.Service<CurrentUser, Principal>()("@wes/http-node/CurrentUser") {}

/**
 * `Authorization: Bearer <token>`. The scheme is written lowercase, as the contract's document
 * has it (RFC 9110: schemes are case-insensitive, HttpApi compares them so).
 */
const bearer = HttpApiSecurity.http({ scheme: "bearer" })

/** Bearer API tokens (`wes_...`), with the contract's three 401 messages. */
export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: CurrentUser }>()("Authentication", {
  error: [Unauthorized, Unavailable],
  security: { bearer }
}) {}

/** The operator's token (`WES_ADMIN_TOKEN`); without it configured, /admin/v1 answers 404. */
export class AdminAuthentication extends HttpApiMiddleware.Service<AdminAuthentication>()("AdminAuthentication", {
  error: [Unauthorized, NotFoundStatus],
  security: { adminBearer: bearer }
}) {}

/** Errors every operation may answer (the router's, the rate limit's, the HTTP parser's, the store's). */
const apiErrors = [
  BadRequest,
  Unauthorized,
  NotFoundStatus,
  MethodNotAllowedError,
  RateLimitedError,
  HeadersTooLargeError,
  InternalError,
  Unavailable
] as const

/** An operation's own errors, then those of every operation. */
const errors = <const E extends ReadonlyArray<Schema.Top>>(...own: E) => [...own, ...apiErrors] as const

const Id = { id: Schema.String.annotate({ format: "uuid" }) }

/** An integer query parameter from `min` to `max`; any other value is refused with `message`. */
const intParam = (min: number, max: number, message: string) =>
  Schema.String.annotate({ description: "a string to be decoded into a number", message }).pipe(
    Schema.decodeTo(
      Schema.Number.check(Schema.makeFilter((n: number) => Number.isSafeInteger(n) && n >= min && n <= max, { message })),
      SchemaTransformation.numberFromString
    )
  )

/** `page` (default 1, minimum 1) and `per_page` (default 10, 1-100). */
export const PageParams = Schema.Struct({
  page: Schema.optional(intParam(1, Number.MAX_SAFE_INTEGER, "must be an integer of at least 1")),
  per_page: Schema.optional(intParam(1, 100, "must be an integer from 1 to 100"))
})

/**
 * Written in place where it is used, not as a component (`identifier` taken away): how the
 * contract's document has request bodies and the 201 answers. A request body sent as anything
 * but an object then reads "must be an object", as the contract's 400 says.
 */
const inPlace = <S extends Schema.Top>(schema: S): S["Rebuild"] => schema.annotate({ identifier: undefined })

/** 201: the created resource, written in place and described "Success" (the contract's document). */
const created = <S extends Schema.Top>(schema: S) => inPlace(schema).pipe(HttpApiSchema.status(201))

/** 201 of create-runner: the runner's headers masked, documented as the contract's `Runner`. */
const CreatedRunner = withMaskedHeaders(RunnerView).pipe(HttpApiSchema.status(201))

/** 204: described as the contract's document has it. */
const NoContent = HttpApiSchema.NoContent.annotate({ description: "Success" })

/**
 * Request bodies are decoded strictly: every problem is reported (not only the first), and a
 * field the schema does not declare is a 400 naming it, not silently dropped.
 */
const strict = { errors: "all", onExcessProperty: "error" } as const

/** A multipart form (see Forms.ts); decoded strictly, as every body. */
const form = <S extends Schema.Top>(schema: S, description: string) =>
  schema.annotate({ description }).pipe(HttpApiSchema.asMultipart())

const PARAMS_DOC = "Dynamic parameters: a field `$<name>` (text, or a file part) feeds `$text(<name>)` or `$file(<name>)`; " +
  "for `$file(<name>)` the text may be an `https://` URL, which WES fetches once, while the request is answered, " +
  "and stores as the file (its bytes count toward the request's size limit; a URL that cannot be fetched is a 400 " +
  "naming the parameter, the URL and the reason); " +
  "a field `#<name>` (text) feeds `#choice(<name>)`. Maximum 50 MB per request."

const JSON_DOC = "JSON file (a text field is accepted too)"

const MODELS_DOC = `${JSON_DOC}: model files the runner needs, \`[{url, sha256, folder, filename}]\` (at most ${MAX_MODEL_FILES}; ` +
  "`folder` one of ComfyUI's model folders). A runner reached through `wes-agent` downloads those it lacks, " +
  "verified by sha256, before the prompt is posted; other runners must already have them"

const WEBHOOK_URL_DOC = "Send this workflow's webhooks (status queued, running and every end) to this http(s) URL instead of " +
  "your default endpoint; signed with your webhook secret, so PUT /v1/webhook first."

export const CreateWorkflowForm = form(
  Schema.StructWithRest(
    Schema.Struct({
      name: TextField.annotate({ description: "1-200 characters" }),
      workflow_json: Schema.optionalKey(jsonDocument(`${JSON_DOC}: the workflow in ComfyUI API format`)),
      template_id: Schema.optionalKey(TextField.annotate({ description: "Start from this template instead of workflow_json" })),
      tags: Schema.optionalKey(TextField.annotate({ description: "Comma-separated tags; used to select a runner" })),
      // Described for this form, so written in place rather than as the shared component.
      priority: Schema.optionalKey(Priority.annotate({
        identifier: undefined,
        description: "low, normal (the default) or high, up to the tier's max_priority; on its runner higher priorities go first"
      })),
      webhook_url: Schema.optionalKey(TextField.annotate({ description: WEBHOOK_URL_DOC })),
      models: Schema.optionalKey(jsonDocument(`${MODELS_DOC}. Added to the template's; one file per folder/filename.`))
    }),
    [ParamFields]
  ),
  PARAMS_DOC
)

export const RerunWorkflowForm = form(
  Schema.StructWithRest(
    Schema.Struct({
      webhook_url: Schema.optionalKey(TextField.annotate({ description: `${WEBHOOK_URL_DOC} Not sent: the original's.` }))
    }),
    [ParamFields]
  ),
  `Dynamic parameters; those not sent keep the original's values. ${PARAMS_DOC}`
)

export const CreateTemplateForm = form(
  Schema.Struct({
    name: TextField.annotate({ description: "1-100 characters" }),
    description: TextField.annotate({ description: "1-500 characters" }),
    body: jsonDocument(`${JSON_DOC}: the workflow definition`),
    models: Schema.optionalKey(jsonDocument(`${MODELS_DOC}, for every workflow made from it.`))
  }),
  "A template: a reusable workflow definition."
)

export const UpdateTemplateForm = form(
  Schema.Struct({
    name: Schema.optionalKey(TextField),
    description: Schema.optionalKey(TextField),
    body: Schema.optionalKey(jsonDocument(JSON_DOC)),
    models: Schema.optionalKey(jsonDocument(MODELS_DOC))
  }),
  "Omitted fields keep their values."
)

/**
 * `Last-Event-ID`: resume after this event (blank: from now). Documented on the header's side (the
 * OpenAPI document shows that side); the pattern is a unicode one, the kind JSON Schema exports.
 */
const LastEventId = Schema.String.check(
  Schema.isPattern(/^\s*(\d{1,15})?\s*$/u, { message: "must be a non-negative integer (an event id)" })
).annotate({ description: "Resume after this event id (what the stream sent as `id:`)" }).pipe(
  Schema.decodeTo(
    Schema.UndefinedOr(Schema.Number),
    SchemaTransformation.transform({
      decode: (s: string) => (s.trim() === "" ? undefined : Number(s.trim())),
      encode: (n: number | undefined) => (n === undefined ? "" : String(n))
    })
  )
)

/**
 * `previews=true`: the stream also carries `preview` events (live preview images; never stored,
 * never replayed). Documented on the parameter's side, as `LastEventId`.
 */
const PreviewsFlag = Schema.Literals(["true", "false"]).annotate({
  description: "`true`: also send `preview` events, the latest preview image of the running node (at most 2 per second; not replayed)"
}).pipe(
  Schema.decodeTo(
    Schema.Boolean,
    SchemaTransformation.transform({ decode: (s: "true" | "false") => s === "true", encode: (b: boolean) => (b ? "true" as const : "false" as const) })
  )
)

/**
 * The event stream, as the contract describes it. The server writes it as it goes (SseHub); a
 * client reads the response's body (`responseMode: "response-only"`) or uses EventSource.
 */
const sse = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/event-stream" })).annotate({
  description: "Server-sent events: `status`, `queue`, `provisioning` (model files being placed on an agent runner: `{folder, filename, bytes, total, percent}`), `progress`, `executing`, `output`, then `done`. " +
    "`id:` is the workflow's event sequence; send `Last-Event-ID` to resume. With `previews=true`, also `preview` " +
    "events without `id:` (`{node, content_type, image}`, the image base64-encoded), dropped rather than queued."
})

const fileBody = Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array()).annotate({ description: "The output file, with its content type" })

/** A download's conditional and range request headers (RFC 9110), each documented on its side. */
const DownloadHeaders = {
  range: Schema.optional(Schema.String.annotate({ description: "One byte range: `bytes=<first>-<last>`, `bytes=<first>-` or `bytes=-<suffix length>` (206); several: the whole file" })),
  "if-none-match": Schema.optional(Schema.String.annotate({ description: "The ETag of a copy you hold: 304 when it is this output's" })),
  "if-range": Schema.optional(Schema.String.annotate({ description: "With Range: the range only if this is the output's ETag, else the whole file" }))
}

const partialFileBody = Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array(), HttpApiSchema.status(206))
  .annotate({ description: "The bytes of the range asked for; `Content-Range: bytes <first>-<last>/<size>`" })

const NotModified = HttpApiSchema.Empty(304).annotate({ description: "`If-None-Match` named this output's ETag: your copy is current" })

const Redirected = HttpApiSchema.Empty(307).annotate({
  description: "With `WES_BLOB_REDIRECT=true` on a store that serves signed URLs (S3): `Location` is a short-lived URL of the file"
})

const DOWNLOAD_DOC = "The file with its `Content-Type`, `Content-Length`, a strong `ETag`, `Accept-Ranges: bytes` and " +
  "`Content-Disposition` with the original file name (`inline` for images, video and audio, else `attachment`; " +
  "`filename*` for a non-ASCII name)."

const zipBody = Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "application/zip" })).annotate({
  description: "A ZIP archive (entries stored, not compressed) of every output, as `<subfolder>/<filename>`, a repeated name numbered"
})

export class UserGroup extends HttpApiGroup.make("user")
  .add(
    HttpApiEndpoint.get("get", "/v1/user", { success: CurrentUserView, error: errors() })
      .annotate(OpenApi.Summary, "The caller: tier, limits and usage")
  )
  .middleware(Authentication)
{}

export class WorkflowsGroup extends HttpApiGroup.make("workflows")
  .add(
    HttpApiEndpoint.post("create", "/v1/workflow", {
      payload: CreateWorkflowForm,
      success: created(WorkflowSummary),
      error: errors(Forbidden)
    }).annotate(OpenApi.Summary, "Create a workflow (from workflow_json or template_id)"),
    HttpApiEndpoint.post("parameters", "/v1/workflow/parameters", {
      payload: inPlace(DescribeParametersRequest),
      success: WorkflowParameters,
      error: errors()
    }).annotate(OpenApi.Summary, "Describe a definition's parameters: the type each value is converted to on create"),
    HttpApiEndpoint.get("list", "/v1/workflow", {
      query: { ...PageParams.fields, status: Schema.optional(WorkflowStatus), tag: Schema.optional(Schema.String) },
      success: Schema.Struct({ workflows: Schema.Array(WorkflowSummary), total: Int }),
      error: errors()
    }).annotate(OpenApi.Summary, "List workflows, newest first"),
    HttpApiEndpoint.get("get", "/v1/workflow/:id", { params: Id, success: WorkflowDetail, error: errors() })
      .annotate(OpenApi.Summary, "Get a workflow (detail form)"),
    HttpApiEndpoint.post("rerun", "/v1/workflow/:id/rerun", {
      params: Id,
      payload: RerunWorkflowForm,
      success: created(WorkflowSummary),
      error: errors(Forbidden)
    }).annotate(OpenApi.Summary, "Rerun a workflow with new parameter values"),
    HttpApiEndpoint.post("cancel", "/v1/workflow/:id/cancel", { params: Id, success: WorkflowSummary, error: errors(ConflictStatus) })
      .annotate(OpenApi.Summary, "Cancel an unfinished workflow"),
    HttpApiEndpoint.get("subscribe", "/v1/workflow/:id/subscribe", {
      params: Id,
      query: { previews: Schema.optional(PreviewsFlag) },
      headers: { "last-event-id": Schema.optional(LastEventId) },
      success: sse,
      error: errors()
    }).annotate(OpenApi.Summary, "Follow a workflow's progress (SSE)"),
    HttpApiEndpoint.get("outputs", "/v1/workflow/:id/outputs", {
      params: Id,
      success: Schema.Struct({ outputs: Schema.Array(WorkflowOutputView) }),
      error: errors()
    }).annotate(OpenApi.Summary, "List a workflow's output files"),
    HttpApiEndpoint.get("output", "/v1/workflow/:id/outputs/:output_id", {
      params: { id: Schema.String, output_id: Schema.String },
      headers: DownloadHeaders,
      success: [fileBody, partialFileBody, NotModified, Redirected],
      error: errors(Gone, RangeNotSatisfiableError)
    }).annotate(OpenApi.Summary, "Download an output file").annotate(OpenApi.Description, DOWNLOAD_DOC)
      .annotate(OpenApi.Transform, withBinaryBodyDescriptions),
    HttpApiEndpoint.get("outputsZip", "/v1/workflow/:id/outputs.zip", {
      params: Id,
      success: zipBody,
      error: errors(Gone)
    }).annotate(OpenApi.Summary, "Download all of a workflow's output files as one ZIP archive")
      .annotate(OpenApi.Transform, withBinaryBodyDescriptions),
    HttpApiEndpoint.get("deliveries", "/v1/workflow/:id/deliveries", {
      params: Id,
      success: Schema.Struct({ deliveries: Schema.Array(DeliveryView) }),
      error: errors()
    }).annotate(OpenApi.Summary, "The workflow's webhook deliveries, oldest first, with their attempts"),
    HttpApiEndpoint.post("retryDelivery", "/v1/workflow/:id/deliveries/:delivery_id/retry", {
      params: { id: Schema.String, delivery_id: Schema.String },
      success: DeliveryView,
      error: errors()
    }).annotate(OpenApi.Summary, "Send a webhook delivery again now (same webhook-id; retried for another 24 h)")
  )
  .middleware(Authentication)
{}

const WebhookUrl = Schema.Struct({ url: Schema.String.annotate({ description: "http(s) URL receiving the webhooks" }) })

export class WebhookGroup extends HttpApiGroup.make("webhook")
  .add(
    HttpApiEndpoint.put("put", "/v1/webhook", { payload: WebhookUrl, success: WebhookView, error: errors() })
      .annotate(OpenApi.Summary, "Set your default webhook endpoint")
      .annotate(
        OpenApi.Description,
        "A new endpoint answers with its whole signing secret (`whsec_...`), shown this once; " +
          "changing the URL of an existing one keeps its secret (masked in the answer)."
      ),
    HttpApiEndpoint.get("get", "/v1/webhook", { success: WebhookView, error: errors() })
      .annotate(OpenApi.Summary, "Your webhook endpoint (secret masked)"),
    HttpApiEndpoint.delete("delete", "/v1/webhook", { success: NoContent, error: errors() })
      .annotate(OpenApi.Summary, "Remove your webhook endpoint and its secrets"),
    HttpApiEndpoint.post("rotate", "/v1/webhook/rotate-secret", { success: WebhookView, error: errors() })
      .annotate(OpenApi.Summary, "A new signing secret (shown once); the old one keeps signing alongside for 24 h")
  )
  .middleware(Authentication)
{}

export class TemplatesGroup extends HttpApiGroup.make("templates")
  .add(
    HttpApiEndpoint.post("create", "/v1/template", { payload: CreateTemplateForm, success: created(Template), error: errors(Forbidden) })
      .annotate(OpenApi.Summary, "Create a template"),
    HttpApiEndpoint.get("list", "/v1/template", {
      query: PageParams.fields,
      success: Schema.Struct({ templates: Schema.Array(TemplateListItem), total: Int }),
      error: errors()
    }).annotate(OpenApi.Summary, "List templates (without bodies), newest first"),
    HttpApiEndpoint.get("get", "/v1/template/:id", { params: Id, success: Template, error: errors() })
      .annotate(OpenApi.Summary, "Get a template"),
    HttpApiEndpoint.put("update", "/v1/template/:id", { params: Id, payload: UpdateTemplateForm, success: Template, error: errors() })
      .annotate(OpenApi.Summary, "Update a template"),
    HttpApiEndpoint.delete("delete", "/v1/template/:id", { params: Id, success: NoContent, error: errors() })
      .annotate(OpenApi.Summary, "Delete a template")
  )
  .middleware(Authentication)
{}

const RunnerList = Schema.Struct({ runners: Schema.Array(RunnerResponse), total: Int })

const RunnerTokenParams = { ...Id, token_id: Schema.String.annotate({ format: "uuid" }) }

const AGENT_TOKEN_DOC = "Start `wes-agent` beside the runner's ComfyUI with the token in WES_RUNNER_TOKEN: it lets that agent " +
  "connect as this runner and nothing else (it is refused on /v1). At most 10 live tokens per runner; 409 for a direct runner."

export class RunnersGroup extends HttpApiGroup.make("runners")
  .add(
    HttpApiEndpoint.post("create", "/v1/runner", { payload: inPlace(CreateRunnerRequest), success: CreatedRunner, error: errors(Forbidden) })
      .annotate(OpenApi.Summary, "Register a runner (a direct runner's endpoint is probed)")
      .annotate(
        OpenApi.Description,
        "`connection` is `direct` (the default: WES calls `endpoint`, probed first) or `agent` (WES drives the runner " +
          "through the `wes-agent` that dials out to it; `endpoint` may be omitted and is never connected to; " +
          "create a token with POST /v1/runner/{id}/agent-token). The connection cannot be changed later."
      ),
    HttpApiEndpoint.get("list", "/v1/runner", {
      query: { ...PageParams.fields, status: Schema.optional(RunnerStatus) },
      success: RunnerList,
      error: errors()
    }).annotate(OpenApi.Summary, "List runners, newest first"),
    HttpApiEndpoint.get("get", "/v1/runner/:id", { params: Id, success: RunnerResponse, error: errors() })
      .annotate(OpenApi.Summary, "Get a runner"),
    HttpApiEndpoint.patch("update", "/v1/runner/:id", { params: Id, payload: inPlace(UpdateRunnerRequest), success: RunnerResponse, error: errors() })
      .annotate(OpenApi.Summary, "Update a runner (omitted fields keep their values)"),
    HttpApiEndpoint.put("replace", "/v1/runner/:id", { params: Id, payload: inPlace(UpdateRunnerRequest), success: RunnerResponse, error: errors() })
      .annotate(OpenApi.Summary, "Update a runner (same as PATCH)"),
    HttpApiEndpoint.delete("delete", "/v1/runner/:id", { params: Id, success: NoContent, error: errors(ConflictStatus) })
      .annotate(OpenApi.Summary, "Delete a runner without unfinished workflows"),
    HttpApiEndpoint.get("history", "/v1/runner/:id/history", { params: Id, success: Schema.Array(WorkflowSummary), error: errors() })
      .annotate(OpenApi.Summary, "The caller's 10 newest workflows on this runner"),
    HttpApiEndpoint.post("createAgentToken", "/v1/runner/:id/agent-token", {
      params: Id,
      success: created(IssuedRunnerToken),
      error: errors(ConflictStatus)
    }).annotate(OpenApi.Summary, "Create a runner token for an agent runner (shown once)").annotate(OpenApi.Description, AGENT_TOKEN_DOC),
    HttpApiEndpoint.get("listAgentTokens", "/v1/runner/:id/agent-tokens", { params: Id, success: Schema.Array(RunnerTokenView), error: errors() })
      .annotate(OpenApi.Summary, "The runner's tokens, newest first, revoked ones included (never their values)"),
    HttpApiEndpoint.delete("revokeAgentToken", "/v1/runner/:id/agent-token/:token_id", {
      params: RunnerTokenParams,
      success: NoContent,
      error: errors()
    }).annotate(OpenApi.Summary, "Revoke a runner token: its agent is disconnected within a lease")
  )
  .middleware(Authentication)
{}

export class ManagedRunnersGroup extends HttpApiGroup.make("managedRunners")
  .add(
    HttpApiEndpoint.get("list", "/v1/managed-runner", {
      query: PageParams.fields,
      success: Schema.Struct({ runners: Schema.Array(ManagedRunnerView), total: Int }),
      error: errors(Forbidden)
    }).annotate(OpenApi.Summary, "Active managed runners of the caller's tier"),
    HttpApiEndpoint.get("history", "/v1/managed-runner/:id/history", {
      params: Id,
      success: Schema.Array(WorkflowSummary),
      error: errors(Forbidden)
    }).annotate(OpenApi.Summary, "The caller's 10 newest workflows on this managed runner")
  )
  .middleware(Authentication)
{}

const Health = Schema.Struct({ status: Schema.Literal("ok") })

export class SystemGroup extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("healthz", "/healthz", { success: Health, error: errors() }).annotate(OpenApi.Summary, "Liveness"),
    HttpApiEndpoint.get("readyz", "/readyz", { success: Health, error: errors() })
      .annotate(OpenApi.Summary, "Readiness: the store answers and the server is not shutting down")
  )
{}

const TokenId = { id: Schema.String }

export class AdminGroup extends HttpApiGroup.make("admin")
  .add(
    HttpApiEndpoint.post("createUser", "/admin/v1/users", { payload: inPlace(CreateUserRequest), success: created(User), error: errors() }),
    HttpApiEndpoint.get("listUsers", "/admin/v1/users", {
      query: { ...PageParams.fields, tier: Schema.optional(Tier) },
      success: Schema.Struct({ users: Schema.Array(User), total: Int }),
      error: errors()
    }),
    HttpApiEndpoint.get("getUser", "/admin/v1/users/:id", { params: Id, success: UserDetail, error: errors() }),
    HttpApiEndpoint.patch("updateUser", "/admin/v1/users/:id", { params: Id, payload: inPlace(UpdateUserRequest), success: User, error: errors() }),
    HttpApiEndpoint.post("issueToken", "/admin/v1/users/:id/tokens", {
      params: Id,
      payload: inPlace(IssueTokenRequest),
      success: created(IssuedToken),
      error: errors()
    }),
    HttpApiEndpoint.get("listTokens", "/admin/v1/users/:id/tokens", { params: Id, success: Schema.Array(ApiTokenView), error: errors() }),
    HttpApiEndpoint.delete("revokeToken", "/admin/v1/tokens/:id", { params: TokenId, success: NoContent, error: errors() }),
    HttpApiEndpoint.post("createManagedRunner", "/admin/v1/managed-runners", {
      payload: inPlace(CreateManagedRunnerRequest),
      success: ManagedRunnerResponse.pipe(HttpApiSchema.status(201)),
      error: errors()
    }),
    HttpApiEndpoint.get("listManagedRunners", "/admin/v1/managed-runners", {
      query: { ...PageParams.fields, status: Schema.optional(RunnerStatus) },
      success: Schema.Struct({ runners: Schema.Array(ManagedRunnerResponse), total: Int }),
      error: errors()
    }),
    HttpApiEndpoint.get("getManagedRunner", "/admin/v1/managed-runners/:id", { params: Id, success: ManagedRunnerResponse, error: errors() }),
    HttpApiEndpoint.patch("updateManagedRunner", "/admin/v1/managed-runners/:id", {
      params: Id,
      payload: inPlace(UpdateManagedRunnerRequest),
      success: ManagedRunnerResponse,
      error: errors()
    }),
    HttpApiEndpoint.delete("deleteManagedRunner", "/admin/v1/managed-runners/:id", {
      params: Id,
      success: NoContent,
      error: errors(ConflictStatus)
    })
  )
  .middleware(AdminAuthentication)
  .annotate(OpenApi.Exclude, true)
{}

/** The whole API. */
export class WesApi extends HttpApi.make("wes")
  .add(UserGroup, WorkflowsGroup, WebhookGroup, TemplatesGroup, RunnersGroup, ManagedRunnersGroup, SystemGroup, AdminGroup)
  .annotate(HttpApi.PayloadParseOptions, strict)
  .annotate(OpenApi.Transform, withParameterDescriptions)
  .annotate(OpenApi.Title, "WES — Workflow Execution Service")
  .annotate(OpenApi.Version, "1.0.0")
  .annotate(
    OpenApi.Description,
    "Runs ComfyUI workflows on remote runners. Every /v1 operation takes `Authorization: Bearer <token>`. " +
      "Rate limit: 40 requests per 10 s per client IP, then 429 for a 10 s cooldown."
  )
{}
