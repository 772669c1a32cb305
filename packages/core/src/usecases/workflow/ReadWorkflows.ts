/** Reading workflows: one (detail), a page of the caller's (summaries), and the list of their output files (read by OutputFiles.ts). */
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { User } from "../../domain/Account.js"
import { type StorageError, ValidationError, WorkflowNotFound } from "../../domain/Errors.js"
import { isUuid } from "../../domain/Ids.js"
import { pageOf } from "../../domain/Pagination.js"
import { normalizeTag } from "../../domain/Tags.js"
import { estimateOf, estimateSources } from "../QueueEstimate.js"
import { type WorkflowOutput, WorkflowStatus, type WorkflowView } from "../../domain/Workflow.js"
import { WorkflowRepository } from "../../ports/WorkflowRepository.js"
import type { ListWorkflowsInput } from "./Inputs.js"

const decodeStatus = Schema.decodeUnknownResult(WorkflowStatus)

export const makeReadWorkflows = Effect.gen(function*() {
  const repo = yield* WorkflowRepository
  const sources = yield* estimateSources

  /** One workflow, with its place on its runner while it waits (QueueEstimate.ts). */
  const get = (user: User, id: string) =>
    (isUuid(id) ? repo.findForUser(user.id, id) : Effect.succeedNone).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.fail(new WorkflowNotFound()), onSome: Effect.succeed })),
      Effect.flatMap((w) =>
        Effect.map(estimateOf(w, sources), (estimate): WorkflowView => ({ ...w, ...estimate }))
      )
    )

  const list = (user: User, input: ListWorkflowsInput) =>
    Effect.gen(function*() {
      const page = yield* pageOf(input)
      let status: WorkflowStatus | undefined
      if (input.status !== undefined && input.status !== "") {
        const decoded = decodeStatus(input.status)
        if (Result.isFailure(decoded)) {
          return yield* Effect.fail(ValidationError.field("status", `must be one of ${WorkflowStatus.literals.join(", ")}`))
        }
        status = decoded.success
      }
      let tag: string | undefined
      if (input.tag !== undefined && input.tag !== "") {
        const normalized = normalizeTag(input.tag)
        if (Result.isFailure(normalized)) return yield* Effect.fail(ValidationError.field("tag", normalized.failure))
        tag = normalized.success
      }
      return yield* repo.list(user.id, { ...page, status, tag })
    })

  const outputs = (user: User, id: string) =>
    (isUuid(id) ? repo.findHeadForUser(user.id, id) : Effect.succeedNone).pipe(
      Effect.flatMap(Option.match({
        onNone: () => Effect.fail(new WorkflowNotFound()),
        onSome: (w): Effect.Effect<ReadonlyArray<WorkflowOutput>, WorkflowNotFound | StorageError> => repo.listOutputs(w.id)
      }))
    )

  return { get, list, outputs }
})
