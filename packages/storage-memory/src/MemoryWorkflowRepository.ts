import {
  DispatchQueue,
  DuplicateIdempotencyKey,
  isTerminal,
  LimitReached,
  NotFound,
  pageBounds,
  runnerOf,
  toSummary,
  type Workflow,
  type WorkflowOutput,
  WorkflowRepository
} from "@wes/core"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import { IndexByOwner, pageOf } from "./NewestFirst.js"

const bump = (counts: Map<string, number>, key: string, by: number) => {
  const n = (counts.get(key) ?? 0) + by
  if (n === 0) counts.delete(key)
  else counts.set(key, n)
}

const runnerId = (w: Workflow): string | undefined => runnerOf(w)?.id

/**
 * Workflows in memory, and the dispatch queue over them (claims share the same indexes). Each
 * operation runs synchronously, so concurrent fibers cannot interleave inside one.
 */
export const makeMemoryWorkflowStore = Effect.gen(function*() {
  const wakeups = yield* PubSub.sliding<string>(1024)
  const byId = new Map<string, Workflow>()
  const byUser = new IndexByOwner()
  const unfinished = new Set<string>()
  const activeByUser = new Map<string, number>()
  const inFlightByRunner = new Map<string, number>()
  const idempotency = new Map<string, string>()
  const outputs = new Map<string, Array<WorkflowOutput>>()
  /** Unfinished workflow ids per runner, in insertion order. */
  const unfinishedByRunner = new Map<string, Set<string>>()
  const claims = new Map<string, { readonly owner: string; readonly until: number }>()

  const account = (w: Workflow, sign: 1 | -1) => {
    if (isTerminal(w.status)) return
    bump(activeByUser, w.user_id, sign)
    const r = runnerId(w)
    if (r !== undefined) {
      bump(inFlightByRunner, r, sign)
      let set = unfinishedByRunner.get(r)
      if (sign === 1) {
        if (set === undefined) unfinishedByRunner.set(r, (set = new Set()))
        set.add(w.id)
      } else if (set !== undefined) {
        set.delete(w.id)
        if (set.size === 0) unfinishedByRunner.delete(r)
      }
    }
    if (sign === 1) unfinished.add(w.id)
    else unfinished.delete(w.id)
  }

  const summaries = (userId: string) => {
    const index = byUser.peek(userId)
    return index === undefined ? [] : Array.from(index.newest(), (id) => byId.get(id)!)
  }

  const repository = WorkflowRepository.of({
    insert: (workflow, options = {}) =>
      Effect.suspend((): Effect.Effect<Workflow, LimitReached | DuplicateIdempotencyKey> => {
        const key = workflow.idempotency_key
        if (key !== null) {
          const existing = byId.get(idempotency.get(`${workflow.user_id}\u0000${key}`) ?? "")
          if (existing !== undefined) {
            const fresh = options.idempotency_since === undefined ||
              DateTime.greaterThanOrEqualTo(existing.created_at, options.idempotency_since)
            if (fresh) return Effect.fail(new DuplicateIdempotencyKey({ existing }))
          }
        }
        const limits = options.limits
        if (limits !== undefined) {
          if ((activeByUser.get(workflow.user_id) ?? 0) + 1 > limits.active_workflows) {
            return Effect.fail(new LimitReached({ limit: "active_workflows" }))
          }
          if (byUser.of(workflow.user_id).countSince(limits.day_start) + 1 > limits.workflows_per_day) {
            return Effect.fail(new LimitReached({ limit: "workflows_per_day" }))
          }
        }
        byId.set(workflow.id, workflow)
        byUser.of(workflow.user_id).add(workflow.id, workflow.created_at)
        if (key !== null) idempotency.set(`${workflow.user_id}\u0000${key}`, workflow.id)
        account(workflow, 1)
        return Effect.succeed(workflow)
      }),
    findById: (id) => Effect.sync(() => Option.fromNullable(byId.get(id))),
    findForUser: (userId, id) =>
      Effect.sync(() => Option.filter(Option.fromNullable(byId.get(id)), (w) => w.user_id === userId)),
    findByIdempotencyKey: (userId, key, since) =>
      Effect.sync(() =>
        Option.filter(
          Option.fromNullable(byId.get(idempotency.get(`${userId}\u0000${key}`) ?? "")),
          (w) => DateTime.greaterThanOrEqualTo(w.created_at, since)
        )
      ),
    update: <E>(id: string, f: (current: Workflow) => Either.Either<Workflow, E>) =>
      Effect.suspend((): Effect.Effect<Workflow, E | NotFound> => {
        const current = byId.get(id)
        if (current === undefined) return Effect.fail(new NotFound({ resource: "workflow", message: "Workflow not found" }))
        const next = f(current)
        if (Either.isLeft(next)) return Effect.fail(next.left)
        account(current, -1)
        byId.set(id, next.right)
        account(next.right, 1)
        return Effect.succeed(next.right)
      }),
    list: (userId, query) =>
      Effect.sync(() => {
        const { end, start } = pageBounds(query)
        const page = pageOf(
          summaries(userId),
          (w) => (query.status === undefined || w.status === query.status) && (query.tag === undefined || w.tags.includes(query.tag)),
          start,
          end - start
        )
        return { items: page.items.map(toSummary), total: page.total }
      }),
    history: (userId, runner, limit) =>
      Effect.sync(() => pageOf(summaries(userId), (w) => runnerId(w) === runner.id, 0, limit).items.map(toSummary)),
    countActive: (userId) => Effect.sync(() => activeByUser.get(userId) ?? 0),
    countCreatedSince: (userId, since) => Effect.sync(() => byUser.peek(userId)?.countSince(since) ?? 0),
    countInFlight: (runnerIds) =>
      Effect.sync(() => new Map(runnerIds.map((id) => [id, inFlightByRunner.get(id) ?? 0] as const))),
    listByStatus: (statuses, limit) =>
      Effect.sync(() => {
        const wanted = new Set(statuses)
        const source = statuses.every((s) => !isTerminal(s)) ? unfinished : byId.keys()
        const out: Array<Workflow> = []
        for (const id of source) {
          const w = byId.get(id)!
          if (wanted.has(w.status)) out.push(w)
        }
        out.sort((a, b) => DateTime.toEpochMillis(a.created_at) - DateTime.toEpochMillis(b.created_at))
        return out.slice(0, limit)
      }),
    addOutputs: (added) =>
      Effect.sync(() => {
        for (const o of added) {
          const list = outputs.get(o.workflow_id)
          if (list === undefined) outputs.set(o.workflow_id, [o])
          else list.push(o)
        }
      }),
    listOutputs: (workflowId) => Effect.sync(() => outputs.get(workflowId)?.slice() ?? []),
    listUnfinishedOnRunner: (runner, limit) =>
      Effect.sync(() => {
        const out: Array<Workflow> = []
        for (const id of unfinishedByRunner.get(runner) ?? []) {
          if (out.length >= limit) break
          out.push(byId.get(id)!)
        }
        return out
      }),
    unfinishedRunners: Effect.sync(() =>
      Array.from(unfinishedByRunner.keys(), (id) => {
        const first = byId.get(unfinishedByRunner.get(id)!.values().next().value!)!
        return runnerOf(first)!
      })
    )
  })

  const queue = DispatchQueue.of({
    claim: (runner, owner, limit, leaseMs) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const out: Array<Workflow> = []
        for (const id of unfinishedByRunner.get(runner) ?? []) {
          if (out.length >= limit) break
          const w = byId.get(id)!
          if (w.status !== "accepted" && w.status !== "uploaded") continue
          const claim = claims.get(id)
          if (claim !== undefined && claim.until > now) continue
          claims.set(id, { owner, until: now + leaseMs })
          out.push(w)
        }
        return out
      }),
    renew: (ids, owner, leaseMs) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        for (const id of ids) if (claims.get(id)?.owner === owner) claims.set(id, { owner, until: now + leaseMs })
      }),
    release: (ids, owner) =>
      Effect.sync(() => {
        for (const id of ids) if (claims.get(id)?.owner === owner) claims.delete(id)
      }),
    notify: (runner) => Effect.asVoid(PubSub.publish(wakeups, runner)),
    wakeups: Stream.fromPubSub(wakeups)
  })

  return { repository, queue }
})

/** The workflow repository and the dispatch queue over one set of workflows. */
export const MemoryWorkflowStore: Layer.Layer<WorkflowRepository | DispatchQueue> = Layer.effectContext(
  Effect.map(makeMemoryWorkflowStore, ({ queue, repository }) =>
    Context.make(WorkflowRepository, repository).pipe(Context.add(DispatchQueue, queue)))
)
