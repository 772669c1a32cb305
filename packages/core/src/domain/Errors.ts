/**
 * Every error that crosses a boundary of the core, each named for what happened; embedders match
 * on `_tag`. Each error a client can see has a static `status`: the contract's status for it (the
 * HTTP status the API answers it with), declared once, here (the not-founds' on their base). The
 * core never reads it; the API groups `apiErrors` by it into the contract's `{status, message}`
 * bodies, so no second list maps errors to statuses.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** One field-level problem of a rejected request. */
export const FieldIssue = Schema.Struct({
  field: Schema.String,
  message: Schema.String
})
export interface FieldIssue extends Schema.Schema.Type<typeof FieldIssue> {}

/** The request is malformed: missing or out-of-bounds fields, bad workflow JSON, bad parameters. */
export class ValidationError extends Schema.TaggedError<ValidationError>()("ValidationError", {
  message: Schema.String,
  details: Schema.Array(FieldIssue)
}) {
  static readonly status = 400
  /** A single-field validation error whose message names the field. */
  static field(field: string, message: string): ValidationError {
    return new ValidationError({ message: `${field}: ${message}`, details: [{ field, message }] })
  }
}

/** No active runner accessible to the caller carries every tag of the workflow. */
export class NoEligibleRunner extends Schema.TaggedError<NoEligibleRunner>()("NoEligibleRunner", {
  message: Schema.String,
  tags: Schema.Array(Schema.String)
}) {
  static readonly status = 400
}

/** What one runner lacks of a workflow's needs. */
export const RunnerLack = Schema.Struct({
  runner_id: Schema.String,
  runner_name: Schema.String,
  node_classes: Schema.Array(Schema.String),
  /** `file (NodeClass.input)`. */
  model_files: Schema.Array(Schema.String)
})
export interface RunnerLack extends Schema.Schema.Type<typeof RunnerLack> {}

/**
 * Runners carry the workflow's tags, but none has every node class and model file it uses
 * (400): `runners` says which runner lacks what.
 */
export class MissingCapabilities extends Schema.TaggedError<MissingCapabilities>()("MissingCapabilities", {
  message: Schema.String,
  runners: Schema.Array(RunnerLack)
}) {
  static readonly status = 400
}

/** The runner endpoint did not answer the reachability probe. */
export class RunnerProbeFailed extends Schema.TaggedError<RunnerProbeFailed>()("RunnerProbeFailed", {
  message: Schema.String
}) {
  static readonly status = 400
}

/** A tier limit would be exceeded; the message names the limit and its value. */
export class TierLimitExceeded extends Schema.TaggedError<TierLimitExceeded>()("TierLimitExceeded", {
  message: Schema.String,
  limit: Schema.String,
  value: Schema.Number
}) {
  static readonly status = 403
}

/** The caller's tier has no access to managed runners. */
export class ManagedRunnersForbidden extends Schema.TaggedError<ManagedRunnersForbidden>()(
  "ManagedRunnersForbidden",
  { message: Schema.String }
) {
  static readonly status = 403
}

/** A message that the constructor fills in, and decoding too when the encoded value has none. */
const defaultMessage = (message: string) =>
  Schema.String.pipe(
    Schema.withDecodingDefaultType(Effect.succeed(message)),
    Schema.withConstructorDefault(Effect.succeed(message))
  )

/**
 * The base of a "not found" error (404): a resource does not exist or belongs to someone else (the
 * two are indistinguishable on purpose). Each is named for what was not found, with the contract's
 * message as its default.
 */
const notFound = <Self>() => <const Tag extends string>(tag: Tag, message: string) =>
  Object.assign(Schema.TaggedError<Self>()(tag, { message: defaultMessage(message) }), { status: 404 } as const)

export class WorkflowNotFound extends notFound<WorkflowNotFound>()("WorkflowNotFound", "Workflow not found") {}
export class TemplateNotFound extends notFound<TemplateNotFound>()("TemplateNotFound", "Template not found") {}
export class RunnerNotFound extends notFound<RunnerNotFound>()("RunnerNotFound", "Runner not found") {}
export class ManagedRunnerNotFound extends notFound<ManagedRunnerNotFound>()("ManagedRunnerNotFound", "Managed runner not found") {}
export class UserNotFound extends notFound<UserNotFound>()("UserNotFound", "User not found") {}
export class TokenNotFound extends notFound<TokenNotFound>()("TokenNotFound", "Token not found") {}
/** A workflow's output, or its bytes. */
export class OutputNotFound extends notFound<OutputNotFound>()("OutputNotFound", "Output not found") {}
/** The caller has no webhook endpoint. */
export class WebhookNotFound extends notFound<WebhookNotFound>()("WebhookNotFound", "No webhook is set up (PUT /v1/webhook)") {}
export class DeliveryNotFound extends notFound<DeliveryNotFound>()("DeliveryNotFound", "Delivery not found") {}

/** Every "not found" error, for a signature or a `catchTags` that treats them alike. */
export type NotFound =
  | WorkflowNotFound
  | TemplateNotFound
  | RunnerNotFound
  | ManagedRunnerNotFound
  | UserNotFound
  | TokenNotFound
  | OutputNotFound
  | WebhookNotFound
  | DeliveryNotFound

/** The request conflicts with the resource's current state (e.g. cancelling a finished workflow). */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", {
  message: Schema.String
}) {
  static readonly status = 409
}

/**
 * An output whose file the retention sweeper deleted (410): its workflow ended longer ago than its
 * owner's tier keeps files (`retention_days`). `expired_at` is when its retention ended.
 */
export class OutputExpired extends Schema.TaggedError<OutputExpired>()("OutputExpired", {
  message: Schema.String,
  expired_at: Schema.String
}) {
  static readonly status = 410
}

/** No Authorization header (401 "Missing authorization header"). */
export class MissingAuthorization extends Schema.TaggedError<MissingAuthorization>()("MissingAuthorization", {
  message: defaultMessage("Missing authorization header")
}) {
  static readonly status = 401
}

/** Unknown, malformed or revoked token (401 "Invalid token"). */
export class InvalidToken extends Schema.TaggedError<InvalidToken>()("InvalidToken", {
  message: defaultMessage("Invalid token")
}) {
  static readonly status = 401
}

/** A known token past its expiry (401 "Token has expired"). */
export class TokenExpired extends Schema.TaggedError<TokenExpired>()("TokenExpired", {
  message: defaultMessage("Token has expired")
}) {
  static readonly status = 401
}

/** The store could not be reached or failed; the request may be retried (503). */
export class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {
  static readonly status = 503
}

/** A transition the workflow state machine forbids (never reaches a client as such). */
export class IllegalTransition extends Schema.TaggedError<IllegalTransition>()("IllegalTransition", {
  message: Schema.String,
  workflow_id: Schema.String,
  from: Schema.String,
  event: Schema.String
}) {}

/** The errors a request of the public API can end with; the API declares each under its `status`. */
export const apiErrors = [
  ValidationError,
  NoEligibleRunner,
  MissingCapabilities,
  RunnerProbeFailed,
  TierLimitExceeded,
  ManagedRunnersForbidden,
  WorkflowNotFound,
  TemplateNotFound,
  RunnerNotFound,
  ManagedRunnerNotFound,
  UserNotFound,
  TokenNotFound,
  OutputNotFound,
  WebhookNotFound,
  DeliveryNotFound,
  Conflict,
  OutputExpired,
  MissingAuthorization,
  InvalidToken,
  TokenExpired,
  StorageError
] as const

/** An error a request of the public API can end with. */
export type ApiError = InstanceType<(typeof apiErrors)[number]>
