/**
 * The workflow use cases as one service: create (from JSON or a template), rerun, get, list,
 * cancel, outputs, follow, and the description of a definition's parameters. Each lives in its own module under `usecases/`; this file declares
 * the service and assembles it.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Stream from "effect/Stream"
import type { User } from "../domain/Account.js"
import type { TierPolicy } from "../domain/Tier.js"
import type { Scheduler } from "./Scheduler.js"
import type { RunnerGateway } from "../ports/RunnerGateway.js"
import type { Blob, BlobStore } from "../ports/BlobStore.js"
import type {
  Conflict,
  MissingCapabilities,
  NoEligibleRunner,
  OutputExpired,
  OutputNotFound,
  StorageError,
  TemplateNotFound,
  TierLimitExceeded,
  ValidationError,
  WorkflowNotFound
} from "../domain/Errors.js"
import type { IdGenerator } from "../domain/Ids.js"
import type { Paged } from "../domain/Pagination.js"
import type { TemplateRepository } from "../ports/TemplateRepository.js"
import { makeCancelWorkflow } from "./workflow/CancelWorkflow.js"
import { makeCreateWorkflow } from "./workflow/CreateWorkflow.js"
import { type FollowStart, makeFollowWorkflow } from "./workflow/FollowWorkflow.js"
import { makeDescribeParameters } from "./workflow/DescribeParameters.js"
import type { CreateWorkflowInput, DescribeParametersInput, ListWorkflowsInput, RerunWorkflowInput } from "./workflow/Inputs.js"
import type { WorkflowParameter } from "../domain/ParameterView.js"
import { makeReadWorkflows } from "./workflow/ReadWorkflows.js"
import { makeOutputFiles, type OutputArchive, type StoredOutput } from "./workflow/OutputFiles.js"
import type { Workflow, WorkflowHead, WorkflowOutput, WorkflowSummary, WorkflowView } from "../domain/Workflow.js"
import type { WorkflowEvent, WorkflowEventBus } from "../ports/WorkflowEvents.js"
import type { WorkflowRepository } from "../ports/WorkflowRepository.js"

export type { FollowStart } from "./workflow/FollowWorkflow.js"
export type { OutputArchive, StoredOutput } from "./workflow/OutputFiles.js"
export * from "./workflow/Inputs.js"

type SubmitError = ValidationError | NoEligibleRunner | MissingCapabilities | TierLimitExceeded | StorageError

export class WorkflowService extends Context.Service<WorkflowService, {
  readonly create: (user: User, input: CreateWorkflowInput) => Effect.Effect<Workflow, SubmitError | TemplateNotFound>
  readonly rerun: (user: User, id: string, input: RerunWorkflowInput) => Effect.Effect<Workflow, SubmitError | WorkflowNotFound>
  /** The definition's placeholders with the types of the inputs they fill on the runners it may go to. */
  readonly describeParameters: (
    user: User,
    input: DescribeParametersInput
  ) => Effect.Effect<{ readonly parameters: ReadonlyArray<WorkflowParameter> }, ValidationError | TemplateNotFound | StorageError>
  readonly get: (user: User, id: string) => Effect.Effect<WorkflowView, WorkflowNotFound | StorageError>
  readonly list: (user: User, input: ListWorkflowsInput) => Effect.Effect<Paged<WorkflowSummary>, ValidationError | StorageError>
  /** Cancels an unfinished workflow (409 `Conflict` when it already finished). */
  readonly cancel: (user: User, id: string) => Effect.Effect<WorkflowHead, WorkflowNotFound | Conflict | StorageError>
  readonly outputs: (user: User, id: string) => Effect.Effect<ReadonlyArray<WorkflowOutput>, WorkflowNotFound | StorageError>
  readonly openOutput: (
    user: User,
    id: string,
    outputId: string
  ) => Effect.Effect<{ readonly output: WorkflowOutput; readonly blob: Blob }, WorkflowNotFound | OutputNotFound | OutputExpired | StorageError>
  /** One output file found without reading it: its row, a read (whole or a byte range) and the store's signed URL; 410 once expired. */
  readonly findOutput: (
    user: User,
    id: string,
    outputId: string
  ) => Effect.Effect<StoredOutput, WorkflowNotFound | OutputNotFound | OutputExpired | StorageError>
  /** The workflow and its output files not expired (for one archive); 410 when it had outputs and all expired. */
  readonly outputArchive: (user: User, id: string) => Effect.Effect<OutputArchive, WorkflowNotFound | OutputExpired | StorageError>
  /**
   * The workflow's events: first its current `status`, then the events after `lastEventId` (when
   * given) or from now on, ending after `done`. A finished workflow yields `status`, `done`.
   */
  readonly follow: (
    user: User,
    id: string,
    lastEventId?: number
  ) => Effect.Effect<Stream.Stream<WorkflowEvent, StorageError>, WorkflowNotFound | StorageError>
  /**
   * Where `follow` starts, for a server that fans one log subscription out to many clients:
   * the events to send first, and the sequence after which the workflow's log continues (none
   * when the workflow is already finished: `first` then ends with `done`).
   */
  readonly followStart: (user: User, id: string, lastEventId?: number) => Effect.Effect<FollowStart, WorkflowNotFound | StorageError>
}>()("@wes/core/WorkflowService") {
  static Live: Layer.Layer<
    WorkflowService,
    never,
    | WorkflowRepository
    | TemplateRepository
    | WorkflowEventBus
    | BlobStore
    | TierPolicy
    | Scheduler
    | IdGenerator
    | RunnerGateway
  > = Layer.effect(
    WorkflowService,
    Effect.map(
      Effect.all([makeCreateWorkflow, makeReadWorkflows, makeOutputFiles, makeCancelWorkflow, makeFollowWorkflow, makeDescribeParameters]),
      ([create, read, files, cancel, follow, describe]) =>
        WorkflowService.of({ ...create, ...read, ...files, ...cancel, ...follow, ...describe })
    )
  )
}
