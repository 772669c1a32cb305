/** The inputs of the workflow use cases, and the answer a repeated idempotent request gets. */
import * as Duration from "effect/Duration"
import type { BlobContent } from "../../ports/BlobStore.js"
import type { PageInput } from "../../domain/Pagination.js"
import type { SuppliedParam } from "../../domain/Placeholders.js"
import type { Workflow } from "../../domain/Workflow.js"

/** A file part of a request, ready to be written into the blob store. */
export interface UploadedFile {
  readonly filename: string
  readonly content_type: string
  readonly content: BlobContent
  /** Bytes, when known (what URL inputs of the same request share the tier's limit with). */
  readonly size?: number | undefined
}

export interface CreateWorkflowInput {
  /** 1-200 characters. */
  readonly name?: string | undefined
  /** The parsed definition (API format). Exactly one of `workflow_json` and `template_id`. */
  readonly workflow_json?: unknown
  /** Start from one of the caller's templates instead. */
  readonly template_id?: string | undefined
  /** The comma-separated form field, or a list. */
  readonly tags?: string | ReadonlyArray<string> | undefined
  /** `$name` / `#name` fields. */
  readonly params?: ReadonlyArray<SuppliedParam<UploadedFile>> | undefined
  readonly idempotency_key?: string | undefined
  /** `low`, `normal` (the default) or `high`, up to the tier's `max_priority`. */
  readonly priority?: string | undefined
  /** Send this workflow's webhooks here instead of the owner's endpoint (http or https URL). */
  readonly webhook_url?: string | undefined
  /**
   * The parsed JSON of the `models` field: model files an agent runner places before the prompt
   * is posted (`[{url, sha256, folder, filename}]`), added to its template's.
   */
  readonly models?: unknown
}

export interface RerunWorkflowInput {
  readonly params?: ReadonlyArray<SuppliedParam<UploadedFile>> | undefined
  readonly idempotency_key?: string | undefined
  /** Overrides the original's `webhook_url` (absent: the original's). */
  readonly webhook_url?: string | undefined
}

/** What `POST /v1/workflow/parameters` describes: a definition (exactly one of the two) and the tags it would be created with. */
export interface DescribeParametersInput {
  readonly workflow_json?: unknown
  readonly template_id?: string | undefined
  readonly tags?: ReadonlyArray<string> | undefined
}

export interface ListWorkflowsInput extends PageInput {
  readonly status?: string | undefined
  readonly tag?: string | undefined
}

/** How long an `Idempotency-Key` is remembered. */
export const IDEMPOTENCY_WINDOW = Duration.hours(24)

/**
 * A repeat of an idempotent request gets the first response again: the workflow as it was when
 * it was accepted, whatever it has become since.
 */
export const asFirstAnswered = (w: Workflow): Workflow => ({
  ...w,
  status: "accepted",
  updated_at: w.created_at,
  started_at: null,
  completed_at: null,
  prompt_id: null,
  queue_number: null,
  error_node: null,
  exception_type: null,
  exception_message: null
})
