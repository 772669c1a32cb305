/**
 * Every error that crosses a boundary of the core. The HTTP edge maps each `_tag` once to the
 * contract's `{status, message}` body; embedders match on `_tag`.
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
  /** A single-field validation error whose message names the field. */
  static field(field: string, message: string): ValidationError {
    return new ValidationError({ message: `${field}: ${message}`, details: [{ field, message }] })
  }
}

/** No active runner accessible to the caller carries every tag of the workflow. */
export class NoEligibleRunner extends Schema.TaggedError<NoEligibleRunner>()("NoEligibleRunner", {
  message: Schema.String,
  tags: Schema.Array(Schema.String)
}) {}

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
}) {}

/** The runner endpoint did not answer the reachability probe. */
export class RunnerProbeFailed extends Schema.TaggedError<RunnerProbeFailed>()("RunnerProbeFailed", {
  message: Schema.String
}) {}

/** A tier limit would be exceeded; the message names the limit and its value. */
export class TierLimitExceeded extends Schema.TaggedError<TierLimitExceeded>()("TierLimitExceeded", {
  message: Schema.String,
  limit: Schema.String,
  value: Schema.Number
}) {}

/** The caller's tier has no access to managed runners. */
export class ManagedRunnersForbidden extends Schema.TaggedError<ManagedRunnersForbidden>()(
  "ManagedRunnersForbidden",
  { message: Schema.String }
) {}

/** A resource does not exist or belongs to someone else (the two are indistinguishable on purpose). */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  message: Schema.String,
  resource: Schema.Literals(["workflow", "template", "runner", "managed_runner", "user", "token", "output", "webhook", "delivery"])
}) {
  static workflow = () => new NotFound({ resource: "workflow", message: "Workflow not found" })
  static template = () => new NotFound({ resource: "template", message: "Template not found" })
  static runner = () => new NotFound({ resource: "runner", message: "Runner not found" })
  static managedRunner = () => new NotFound({ resource: "managed_runner", message: "Managed runner not found" })
  static user = () => new NotFound({ resource: "user", message: "User not found" })
  static token = () => new NotFound({ resource: "token", message: "Token not found" })
  static output = () => new NotFound({ resource: "output", message: "Output not found" })
  static webhook = () => new NotFound({ resource: "webhook", message: "No webhook is set up (PUT /v1/webhook)" })
  static delivery = () => new NotFound({ resource: "delivery", message: "Delivery not found" })
}

/** The request conflicts with the resource's current state (e.g. cancelling a finished workflow). */
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", {
  message: Schema.String
}) {}

/** No Authorization header (401 "Missing authorization header"). */
/** A message that the constructor fills in, and decoding too when the encoded value has none. */
const defaultMessage = (message: string) =>
  Schema.String.pipe(
    Schema.withDecodingDefaultType(Effect.succeed(message)),
    Schema.withConstructorDefault(Effect.succeed(message))
  )

export class MissingAuthorization extends Schema.TaggedError<MissingAuthorization>()("MissingAuthorization", {
  message: defaultMessage("Missing authorization header")
}) {}

/** Unknown, malformed or revoked token (401 "Invalid token"). */
export class InvalidToken extends Schema.TaggedError<InvalidToken>()("InvalidToken", {
  message: defaultMessage("Invalid token")
}) {}

/** A known token past its expiry (401 "Token has expired"). */
export class TokenExpired extends Schema.TaggedError<TokenExpired>()("TokenExpired", {
  message: defaultMessage("Token has expired")
}) {}

/** The store could not be reached or failed; the request may be retried (503). */
export class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  message: Schema.String,
  cause: Schema.optional(Schema.Defect())
}) {}

/** A transition the workflow state machine forbids (never reaches a client as such). */
export class IllegalTransition extends Schema.TaggedError<IllegalTransition>()("IllegalTransition", {
  message: Schema.String,
  workflow_id: Schema.String,
  from: Schema.String,
  event: Schema.String
}) {}

/** Errors a request of the public API can end with. */
export type ApiError =
  | ValidationError
  | NoEligibleRunner
  | MissingCapabilities
  | RunnerProbeFailed
  | TierLimitExceeded
  | ManagedRunnersForbidden
  | NotFound
  | Conflict
  | MissingAuthorization
  | InvalidToken
  | TokenExpired
  | StorageError
