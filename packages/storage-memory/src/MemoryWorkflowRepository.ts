/**
 * Core's `WorkflowRepository` over the memory store's table. Each write is one synchronous step
 * (a create with its first event and wake-up; a transition with its events and outputs), so
 * concurrent fibers cannot interleave inside one and nothing is half-written.
 */
import {
  DuplicateIdempotencyKey,
  LimitReached,
  pageBounds,
  planTransition,
  applyPlan,
  runnerOf,
  summaryData,
  toSummary,
  transitionEvents,
  type Workflow,
  WorkflowRepository,
  type WorkflowStatus
} from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Option from "effect/Option"
import type { MemoryEventLog } from "./MemoryEventBus.js"
import type { WebhookTable } from "./MemoryWebhooks.js"
import { pageOf } from "./NewestFirst.js"
import type { WorkflowTable } from "./WorkflowTable.js"

/** Strips the definition: what a transition hands back. */
const headOf = ({ workflow_json: _, ...head }: Workflow) => head

export const makeMemoryWorkflowRepository = (
  table: WorkflowTable,
  log: MemoryEventLog,
  wake: (runnerId: string) => void,
  webhooks: WebhookTable
) =>
  WorkflowRepository.of({
    create: (workflow, options = {}) =>
      Effect.suspend((): Effect.Effect<Workflow, LimitReached | DuplicateIdempotencyKey> => {
        const key = workflow.idempotency_key
        const existing = key === null ? undefined : table.byIdempotencyKey(workflow.user_id, key)
        if (existing !== undefined) {
          const fresh = options.idempotency_since === undefined ||
            DateTime.isGreaterThanOrEqualTo(existing.created_at, options.idempotency_since)
          if (fresh) return Effect.fail(new DuplicateIdempotencyKey({ existing }))
        }
        const limits = options.limits
        if (limits !== undefined) {
          if ((table.activeByUser.get(workflow.user_id) ?? 0) + 1 > limits.active_workflows) {
            return Effect.fail(new LimitReached({ limit: "active_workflows" }))
          }
          if (table.byUser.of(workflow.user_id).countSince(limits.day_start) + 1 > limits.workflows_per_day) {
            return Effect.fail(new LimitReached({ limit: "workflows_per_day" }))
          }
        }
        table.insert(workflow)
        log.append(workflow.id, [{ type: "status", data: summaryData(workflow) }], workflow.created_at)
        const runner = runnerOf(workflow)
        if (runner !== undefined) wake(runner.id)
        return Effect.succeed(workflow)
      }),
    transition: (request) =>
      Effect.sync(() => {
        const current = table.byId.get(request.id)
        if (current === undefined || (request.owner !== undefined && current.user_id !== request.owner)) {
          return { _tag: "Missing" as const }
        }
        const next = Result.flatMap(planTransition(request.steps, request.at), (plan) =>
          Result.map(applyPlan(current, plan), (after) => ({ plan, after })))
        if (Result.isFailure(next)) return { _tag: "Refused" as const, status: current.status }
        const { after, plan } = next.success
        const outputs = request.outputs ?? []
        table.replace(current, after)
        if (plan.releaseClaim) table.claims.delete(after.id)
        table.addOutputs(outputs)
        const events = transitionEvents(plan, after, outputs, request.events)
        log.append(after.id, events, request.at)
        webhooks.record(after, events, request.at)
        const moved = runnerOf(after)
        if (plan.releaseClaim && moved !== undefined) wake(moved.id)
        return { _tag: "Applied" as const, workflow: headOf(after) }
      }),
    findById: (id) => Effect.sync(() => Option.fromNullishOr(table.byId.get(id))),
    findForUser: (userId, id) =>
      Effect.sync(() => Option.filter(Option.fromNullishOr(table.byId.get(id)), (w) => w.user_id === userId)),
    findHeadForUser: (userId, id) =>
      Effect.sync(() =>
        Option.map(Option.filter(Option.fromNullishOr(table.byId.get(id)), (w) => w.user_id === userId), headOf)
      ),
    findByIdempotencyKey: (userId, key, since) =>
      Effect.sync(() =>
        Option.filter(
          Option.fromNullishOr(table.byIdempotencyKey(userId, key)),
          (w) => DateTime.isGreaterThanOrEqualTo(w.created_at, since)
        )
      ),
    list: (userId, query) =>
      Effect.sync(() => {
        const { end, start } = pageBounds(query)
        const keep = (w: Workflow) =>
          (query.status === undefined || w.status === query.status) && (query.tag === undefined || w.tags.includes(query.tag))
        const page = pageOf(table.newest(userId), keep, start, end - start)
        return { items: page.items.map(toSummary), total: page.total }
      }),
    history: (userId, runner, limit) =>
      Effect.sync(() => pageOf(table.newest(userId), (w) => runnerOf(w)?.id === runner.id, 0, limit).items.map(toSummary)),
    countActive: (userId) => Effect.sync(() => table.activeByUser.get(userId) ?? 0),
    countCreatedSince: (userId, since) => Effect.sync(() => table.byUser.peek(userId)?.countSince(since) ?? 0),
    countUnfinishedByStatus: Effect.sync(() => {
      const counts = new Map<WorkflowStatus, number>()
      for (const ids of table.unfinishedByRunner.values()) {
        for (const id of ids) {
          const status = table.byId.get(id)!.status
          counts.set(status, (counts.get(status) ?? 0) + 1)
        }
      }
      return counts
    }),
    countInFlight: (runnerIds) =>
      Effect.sync(() => new Map(runnerIds.map((id) => [id, table.inFlightByRunner.get(id) ?? 0] as const))),
    listSubmittedOnRunner: (runner, limit) =>
      Effect.sync(() => {
        const out = []
        for (const id of table.unfinishedByRunner.get(runner) ?? []) {
          if (out.length >= limit) break
          const w = table.byId.get(id)!
          if (w.status === "queued" || w.status === "running" || w.submitted_at !== null) out.push(headOf(w))
        }
        return out
      }),
    unfinishedRunners: Effect.sync(() =>
      Array.from(table.unfinishedByRunner.values(), (ids) => runnerOf(table.byId.get(ids.values().next().value!)!)!)
    ),
    listOutputs: (workflowId) => Effect.sync(() => table.outputs.get(workflowId)?.slice() ?? [])
  })
