/** Runners: user-owned (registered by a user) and managed (run by the operator for paid tiers). */
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { ManagedRunnerId, RunnerId, UserId } from "./Ids.js"
import { Timestamp } from "./Json.js"
import { MAX_TAG_LENGTH, MAX_TAGS } from "./Tags.js"
import { RunnerType } from "./Tier.js"
import { CapabilitiesView } from "./View.js"
import { RunnerAgentView } from "./AgentView.js"
import { comfyUIWarning, RunnerComfyUI } from "./ComfyUIVersion.js"

export const RunnerStatus = Schema.Literals(["active", "disabled"]).annotate({
  identifier: "RunnerStatus",
  message: "must be active or disabled"
})
export type RunnerStatus = typeof RunnerStatus.Type

/** How WES reaches a runner: over HTTP at its endpoint, or through its outbound agent (issue 34). */
export const RunnerConnection = Schema.Literals(["direct", "agent"]).annotate({
  identifier: "RunnerConnection",
  description: "direct: WES calls the endpoint; agent: a wes-agent beside ComfyUI dials out to WES and WES drives ComfyUI through it",
  message: "must be direct or agent"
})
export type RunnerConnection = typeof RunnerConnection.Type

/** True for an absolute http(s) URL with a host and no credentials, query or fragment. */
export const isRunnerEndpoint = (s: string): boolean => {
  if (!URL.canParse(s)) return false
  const u = new URL(s)
  return (u.protocol === "http:" || u.protocol === "https:") && u.hostname !== "" &&
    u.username === "" && u.password === "" && u.search === "" && u.hash === ""
}

/**
 * A runner endpoint: the http or https URL of the runner's ComfyUI API, with a host (the length is
 * checked first, alone). Documented as the contract's document has it: by its length's check.
 */
export const RunnerEndpoint = Schema.String.check(
  Schema.isMaxLength(2048, {
    message: "must be at most 2048 characters",
    title: "maxLength(2048)",
    description: "a string at most 2048 character(s) long"
  }).abort(),
  Schema.makeFilter(isRunnerEndpoint, {
    message: "must be an http:// or https:// URL with a host (no credentials, query or fragment)"
  })
).annotate({ identifier: "RunnerEndpoint" })

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/
// eslint-disable-next-line no-control-regex
const HEADER_VALUE = /^[^\u0000-\u0008\u000a-\u001f\u007f]*$/
/** Headers WES sets itself on runner requests. */
const RESERVED_HEADERS = new Set(["host", "content-length", "content-type", "transfer-encoding", "connection", "upgrade"])

/** Custom headers sent with every request to a runner (string keys to string values). */
export const RunnerHeaders = Schema.Record(Schema.String, Schema.String).check(
  Schema.makeFilter((h) => {
    const names = Object.keys(h)
    if (names.length > 50) return "at most 50 headers are allowed"
    for (const name of names) {
      if (!HEADER_NAME.test(name)) return `${JSON.stringify(name)} is not a valid header name`
      if (RESERVED_HEADERS.has(name.toLowerCase())) return `${JSON.stringify(name)} is set by the service and cannot be overridden`
      const value = h[name]!
      if (value.length > 8192 || !HEADER_VALUE.test(value)) {
        return `the value of ${JSON.stringify(name)} must be at most 8192 characters without line breaks`
      }
    }
    return true
  })
).annotate({ identifier: "RunnerHeaders", description: "Custom HTTP headers sent to the runner" })
export type RunnerHeaders = typeof RunnerHeaders.Type

/** A tag as sent in a JSON array (normalized by `Tags.normalizeTags`). */
export const TagInput = Schema.String.check(
  Schema.makeFilter((t) => {
    const trimmed = t.trim()
    if (trimmed.length === 0) return "tags must not be empty"
    if (trimmed.length > MAX_TAG_LENGTH) return `a tag is at most ${MAX_TAG_LENGTH} characters`
    return true
  })
)

export const TagList = Schema.Array(TagInput).check(
  Schema.isMaxLength(MAX_TAGS, {
    message: `at most ${MAX_TAGS} tags are allowed`,
    title: `maxItems(${MAX_TAGS})`,
    description: `an array of at most ${MAX_TAGS} item(s)`
  })
)

export const RunnerName = Schema.String.check(
  Schema.isMinLength(1, { message: "must be 1-100 characters" }).abort(),
  Schema.isMaxLength(100, { message: "must be 1-100 characters", title: "maxLength(100)", description: "a string at most 100 character(s) long" })
)

/** A user-owned runner, as stored and as returned (headers included). */
export const Runner = Schema.Struct({
  id: RunnerId,
  user_id: UserId,
  name: Schema.String,
  status: RunnerStatus,
  endpoint: Schema.String,
  connection: RunnerConnection,
  tags: Schema.Array(Schema.String),
  headers: Schema.Record(Schema.String, Schema.String),
  comfyui: Schema.NullOr(RunnerComfyUI),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotate({ identifier: "RunnerRecord" })
export interface Runner extends Schema.Schema.Type<typeof Runner> {}

/** What a runner's detail warns about (its ComfyUI version), or null. */
const RunnerWarning = Schema.NullOr(Schema.String).annotate({
  description: "What WES warns about this runner's ComfyUI (a version with the cancel race, one below the minimum), or null"
})

/**
 * A user-owned runner as the API returns it: the record, a warning, what its `/object_info` offered
 * and, for a runner reached through its agent, the agent's health (AgentView.ts).
 */
export const RunnerView = Schema.Struct({
  ...Runner.fields,
  warning: RunnerWarning,
  capabilities: Schema.NullOr(CapabilitiesView),
  agent: Schema.NullOr(RunnerAgentView)
}).annotate({ identifier: "Runner" })
export interface RunnerView extends Schema.Schema.Type<typeof RunnerView> {}

/**
 * The endpoint an agent runner created without one stores: never connected to (WES reaches an
 * agent runner only through its agent), and `.invalid` never resolves (RFC 2606), so nothing
 * could answer at it if something tried.
 */
export const AGENT_ENDPOINT = "http://agent.invalid"

/**
 * Body of create-runner. `endpoint` is required for a direct runner (checked by the use case);
 * an agent runner may omit it (`AGENT_ENDPOINT` is stored) or give one as a label, never connected to.
 */
export const CreateRunnerRequest = Schema.Struct({
  name: RunnerName,
  endpoint: Schema.optionalKey(RunnerEndpoint),
  connection: Schema.optionalKey(RunnerConnection),
  headers: Schema.optionalKey(RunnerHeaders),
  tags: Schema.optionalKey(TagList)
}).annotate({ identifier: "CreateRunnerRequest" })
export interface CreateRunnerRequest extends Schema.Schema.Type<typeof CreateRunnerRequest> {}

/** Body of update-runner: every field optional; tags replace the old ones. */
export const UpdateRunnerRequest = Schema.Struct({
  name: Schema.optionalKey(RunnerName),
  endpoint: Schema.optionalKey(RunnerEndpoint),
  headers: Schema.optionalKey(RunnerHeaders),
  tags: Schema.optionalKey(TagList),
  status: Schema.optionalKey(RunnerStatus)
}).annotate({ identifier: "UpdateRunnerRequest" })
export interface UpdateRunnerRequest extends Schema.Schema.Type<typeof UpdateRunnerRequest> {}

/** A managed runner as stored (and as the operator sees it). */
export const ManagedRunner = Schema.Struct({
  id: ManagedRunnerId,
  name: Schema.String,
  runner_type: RunnerType,
  status: RunnerStatus,
  endpoint: Schema.String,
  headers: Schema.Record(Schema.String, Schema.String),
  tags: Schema.Array(Schema.String),
  comfyui: Schema.NullOr(RunnerComfyUI),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotate({ identifier: "ManagedRunnerRecord" })
export interface ManagedRunner extends Schema.Schema.Type<typeof ManagedRunner> {}

/** A managed runner as the operator sees it: the record and what its `/object_info` offered. */
export const ManagedRunnerAdminView = Schema.Struct({
  ...ManagedRunner.fields,
  warning: RunnerWarning,
  capabilities: Schema.NullOr(CapabilitiesView)
}).annotate({ identifier: "ManagedRunnerAdminView" })
export interface ManagedRunnerAdminView extends Schema.Schema.Type<typeof ManagedRunnerAdminView> {}

/** A managed runner as users see it: no endpoint, headers or owner. */
export const ManagedRunnerView = Schema.Struct({
  id: ManagedRunnerId,
  name: Schema.String,
  runner_type: RunnerType,
  status: RunnerStatus,
  tags: Schema.Array(Schema.String),
  created_at: Timestamp,
  updated_at: Timestamp
}).annotate({ identifier: "ManagedRunner" })
export interface ManagedRunnerView extends Schema.Schema.Type<typeof ManagedRunnerView> {}

export const toManagedRunnerView = (r: ManagedRunner): ManagedRunnerView => ({
  id: r.id,
  name: r.name,
  runner_type: r.runner_type,
  status: r.status,
  tags: r.tags,
  created_at: r.created_at,
  updated_at: r.updated_at
})

/** Operator's body for a new managed runner. */
export const CreateManagedRunnerRequest = Schema.Struct({
  name: RunnerName,
  runner_type: RunnerType,
  endpoint: RunnerEndpoint,
  headers: Schema.optionalKey(RunnerHeaders),
  tags: Schema.optionalKey(TagList),
  status: Schema.optionalKey(RunnerStatus)
}).annotate({ identifier: "CreateManagedRunnerRequest" })
export interface CreateManagedRunnerRequest extends Schema.Schema.Type<typeof CreateManagedRunnerRequest> {}

/** Operator's partial update of a managed runner. */
export const UpdateManagedRunnerRequest = Schema.Struct({
  name: Schema.optionalKey(RunnerName),
  runner_type: Schema.optionalKey(RunnerType),
  endpoint: Schema.optionalKey(RunnerEndpoint),
  headers: Schema.optionalKey(RunnerHeaders),
  tags: Schema.optionalKey(TagList),
  status: Schema.optionalKey(RunnerStatus)
}).annotate({ identifier: "UpdateManagedRunnerRequest" })
export interface UpdateManagedRunnerRequest extends Schema.Schema.Type<typeof UpdateManagedRunnerRequest> {}

/** What the service needs to talk to a runner of either kind. */
export interface RunnerTarget {
  readonly kind: "user" | "managed"
  readonly id: string
  readonly name: string
  readonly endpoint: string
  readonly headers: Readonly<Record<string, string>>
  readonly tags: ReadonlyArray<string>
  readonly status: RunnerStatus
  /** Its ComfyUI as last probed (which API the client uses for it); absent or null: unknown. */
  readonly comfyui?: RunnerComfyUI | null | undefined
  /**
   * How WES reaches it: `direct` (its endpoint, over HTTP), or `agent` (through the `wes-agent`
   * that dialled out to WES; the endpoint is then never connected to). Absent: `direct`.
   */
  readonly connection?: RunnerConnection | undefined
}

export const userRunnerTarget = (r: Runner): RunnerTarget => ({
  kind: "user", id: r.id, name: r.name, endpoint: r.endpoint, headers: r.headers, tags: r.tags, status: r.status, comfyui: r.comfyui,
  connection: r.connection
})
export const managedRunnerTarget = (r: ManagedRunner): RunnerTarget => ({
  kind: "managed", id: r.id, name: r.name, endpoint: r.endpoint, headers: r.headers, tags: r.tags, status: r.status, comfyui: r.comfyui
})

/** The view's fields beside the record: the warning about its ComfyUI, and its capabilities. */
export const runnerViewFields = (r: { readonly comfyui: RunnerComfyUI | null }, capabilities: CapabilitiesView | null) => ({
  warning: comfyUIWarning(r.comfyui),
  capabilities
})

/**
 * Runner header values are write-only: a response shows each header's name with this in place of
 * its value. Sent back unchanged in an update, it keeps the stored value of that header.
 */
export const HEADER_MASK = "********"

/** The headers with every value masked. */
export const maskHeaders = (headers: RunnerHeaders): RunnerHeaders =>
  Object.fromEntries(Object.keys(headers).map((name) => [name, HEADER_MASK]))

/** Headers of an update: a value equal to `HEADER_MASK` keeps the stored value of that header. */
export const unmaskHeaders = (sent: RunnerHeaders, stored: RunnerHeaders): RunnerHeaders =>
  Object.fromEntries(Object.entries(sent).map(([name, value]) =>
    [name, value === HEADER_MASK && Object.hasOwn(stored, name) ? stored[name]! : value]))

/**
 * A schema whose encoded form masks the header values of `schema`'s records (responses). The
 * OpenAPI document names it after `schema`'s own identifier (the encoded side's).
 */
export const withMaskedHeaders = <S extends Schema.Codec<{ readonly headers: RunnerHeaders }, unknown>>(schema: S) =>
  schema.pipe(Schema.decodeTo(
    Schema.toType(schema),
    SchemaTransformation.transform<S["Type"], S["Type"]>({
      decode: (r) => r,
      encode: (r) => ({ ...r, headers: maskHeaders(r.headers) })
    })
  ))

/** `schema` with header values masked, named `identifier` on both sides (the document's component and description). */
const masked = <S extends Schema.Codec<{ readonly headers: RunnerHeaders }, unknown>>(schema: S, identifier: string) =>
  withMaskedHeaders(schema.annotate({ identifier })).annotate({ identifier })

/** A user-owned runner as responses show it: header values masked. */
export const RunnerResponse = masked(RunnerView, "RunnerResponse")
/** A managed runner as the operator's responses show it: header values masked. */
export const ManagedRunnerResponse = masked(ManagedRunnerAdminView, "ManagedRunnerResponse")
