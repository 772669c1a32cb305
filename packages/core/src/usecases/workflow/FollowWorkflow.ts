/**
 * Following a workflow's events (SSE): first its current `status`, then the log after
 * `Last-Event-ID` (or from now on), ending after `done`; a finished workflow gives `status`, `done`.
 */
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import type { User } from "../../domain/Account.js"
import { WorkflowNotFound } from "../../domain/Errors.js"
import { isUuid } from "../../domain/Ids.js"
import { isTerminal } from "../../domain/Workflow.js"
import { summaryData, type WorkflowEvent, WorkflowEventBus } from "../../ports/WorkflowEvents.js"
import { WorkflowRepository } from "../../ports/WorkflowRepository.js"

/** See `WorkflowService.followStart`. */
export interface FollowStart {
  readonly first: ReadonlyArray<WorkflowEvent>
  readonly after: Option.Option<number>
}

export const makeFollowWorkflow = Effect.gen(function*() {
  const repo = yield* WorkflowRepository
  const bus = yield* WorkflowEventBus

  const findHead = (user: User, id: string) =>
    (isUuid(id) ? repo.findHeadForUser(user.id, id) : Effect.succeedNone).pipe(
      Effect.flatMap(Option.match({ onNone: () => Effect.fail(new WorkflowNotFound()), onSome: Effect.succeed }))
    )

  const followStart = (user: User, id: string, lastEventId?: number) =>
    Effect.gen(function*() {
      yield* findHead(user, id)
      // The latest sequence first, then the record: a transition in between is replayed, not lost.
      const latest = yield* bus.lastSeq(id)
      const current = yield* findHead(user, id)
      const now = yield* DateTime.now
      // An id from the future (or another server's log) is read as "up to date".
      const from = Math.min(lastEventId ?? latest, latest)
      const event = (type: "status" | "done", seq: number): WorkflowEvent => ({
        workflow_id: id,
        seq,
        type,
        data: summaryData(current),
        created_at: now
      })
      if (isTerminal(current.status)) {
        return { first: [event("status", latest), event("done", latest)], after: Option.none<number>() } satisfies FollowStart
      }
      return { first: [event("status", from)], after: Option.some(from) } satisfies FollowStart
    })

  const follow = (user: User, id: string, lastEventId?: number) =>
    Effect.map(followStart(user, id, lastEventId), (start) =>
      Stream.concat(
        Stream.fromIterable(start.first),
        Option.match(start.after, {
          onNone: () => Stream.empty,
          onSome: (after) => bus.subscribe(id, after).pipe(Stream.takeUntil((e) => e.type === "done"))
        })
      ))

  return { follow, followStart }
})
