/**
 * Core's `DispatchQueue` over the memory store's table: claims are entries of the table's claim
 * map with an expiry; wake-ups go through a sliding PubSub (a slow dispatcher loses old wake-ups,
 * never work: its scan finds what they announced).
 *
 * A claim of `limit` reads, per user and priority, only the `limit` oldest claimable workflows of
 * the runner (kept in that order by the table), whatever the backlog. Within one priority an
 * older workflow never ranks below a newer one of the same user, so the first `limit` of the whole
 * order are among them, and `orderWaiting` sorts only those.
 */
import { byAge, type ClaimedWorkflow, DispatchQueue, orderWaiting, type Workflow } from "@wes/core"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import type { WorkflowTable } from "./WorkflowTable.js"

interface Candidate {
  readonly id: string
  readonly user_id: string
  readonly priority: Workflow["priority"]
  readonly created_at: number
}

const toCandidate = (w: Workflow): Candidate => ({
  id: w.id,
  user_id: w.user_id,
  priority: w.priority,
  created_at: w.created_at.epochMilliseconds
})

/**
 * What a claim or an estimate reads of `runner`: per user and priority, the `limit` oldest
 * claimable workflows (waiting, no live claim), and each user's work on the runner (queued or
 * running, or waiting under a live claim). It reads the heads of the runner's waiting queues
 * (WorkflowTable), not its whole backlog. A live claim behind the `limit`-th claimable workflow
 * of its queue is not counted; claims are taken oldest first within a queue, so there is none
 * unless a lapsed lease was taken over.
 */
const heads = (table: WorkflowTable, runner: string, now: number, limit: number) => {
  const onRunner = new Map(table.busyByRunner.get(runner) ?? [])
  const claimable: Array<Candidate> = []
  for (const list of table.waitingByRunner.get(runner)?.values() ?? []) {
    let taken = 0
    for (const w of list) {
      if (taken >= limit) break
      const claim = table.claims.get(w.id)
      if (claim !== undefined && claim.until > now) onRunner.set(w.user_id, (onRunner.get(w.user_id) ?? 0) + 1)
      else {
        claimable.push(toCandidate(w))
        taken++
      }
    }
  }
  return { claimable, onRunner }
}

export const makeMemoryDispatchQueue = (table: WorkflowTable, wakeups: PubSub.PubSub<string>): DispatchQueue["Service"] =>
  DispatchQueue.of({
    claim: (runner, owner, limit, leaseMs, agingMs) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const out: Array<ClaimedWorkflow> = []
        if (limit <= 0) return out
        const { claimable, onRunner } = heads(table, runner, now, limit)
        const ranked = orderWaiting(claimable, onRunner, now, agingMs)
        for (const { workflow: { id } } of ranked.slice(0, limit)) {
          const w = table.byId.get(id)!
          table.claims.set(id, { owner, until: now + leaseMs })
          // Marked as possibly posted from now on: whoever claims it next asks the runner first.
          const marked = w.submitted_at === null ? { ...w, submitted_at: DateTime.makeUnsafe(now) } : w
          if (marked !== w) table.replace(w, marked)
          out.push({ workflow: marked, resubmit: w.submitted_at !== null })
        }
        return out
      }),
    waitingOn: (runner, limit) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const { claimable, onRunner } = heads(table, runner, now, limit)
        const waiting = claimable.sort(byAge).slice(0, limit)
        return { waiting, onRunner }
      }),
    claimable: (runners) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const ready = new Set<string>()
        for (const runner of runners) {
          if (heads(table, runner, now, 1).claimable.length > 0) ready.add(runner)
        }
        return ready
      }),
    renew: (ids, owner, leaseMs) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        for (const id of ids) if (table.claims.get(id)?.owner === owner) table.claims.set(id, { owner, until: now + leaseMs })
      }),
    release: (ids, owner) =>
      Effect.sync(() => {
        for (const id of ids) if (table.claims.get(id)?.owner === owner) table.claims.delete(id)
      }),
    notify: (runner) => Effect.asVoid(PubSub.publish(wakeups, runner)),
    wakeups: Stream.fromPubSub(wakeups)
  })
