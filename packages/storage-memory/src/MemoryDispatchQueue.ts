/**
 * Core's `DispatchQueue` over the memory store's table: claims are entries of the table's claim
 * map with an expiry; wake-ups go through a sliding PubSub (a slow dispatcher loses old wake-ups,
 * never work: its scan finds what they announced).
 *
 * A claim of `limit` looks at the runner's unfinished workflows once: it counts each user's work
 * on the runner and keeps, per user and priority, only the `limit` oldest claimable ones. Within
 * one priority an older workflow never ranks below a newer one of the same user, so the first
 * `limit` of the whole order are among them, and `orderWaiting` sorts only those.
 */
import { type ClaimedWorkflow, DispatchQueue, orderWaiting, type Workflow } from "@wes/core"
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
  created_at: w.created_at.epochMillis
})

const older = (a: Candidate, b: Candidate) => a.created_at < b.created_at || (a.created_at === b.created_at && a.id < b.id)

/** Keeps the `n` oldest candidates under `key`, sorted (the input comes nearly sorted: cheap). */
const keepOldest = (kept: Map<string, Array<Candidate>>, key: string, c: Candidate, n: number) => {
  let list = kept.get(key)
  if (list === undefined) kept.set(key, (list = []))
  if (list.length >= n && !older(c, list[list.length - 1]!)) return
  let i = list.length
  while (i > 0 && older(c, list[i - 1]!)) i--
  list.splice(i, 0, c)
  if (list.length > n) list.pop()
}

/**
 * One pass over the runner's unfinished workflows: each claimable one (waiting, no live claim)
 * goes to `claimable`; the rest (queued, running, claimed) are counted per user, and returned.
 */
const scan = (table: WorkflowTable, runner: string, now: number, claimable: (w: Workflow) => void) => {
  const onRunner = new Map<string, number>()
  for (const id of table.unfinishedByRunner.get(runner) ?? []) {
    const w = table.byId.get(id)!
    const claim = table.claims.get(id)
    if ((w.status === "accepted" || w.status === "uploaded") && (claim === undefined || claim.until <= now)) claimable(w)
    else onRunner.set(w.user_id, (onRunner.get(w.user_id) ?? 0) + 1)
  }
  return onRunner
}

export const makeMemoryDispatchQueue = (table: WorkflowTable, wakeups: PubSub.PubSub<string>): DispatchQueue["Type"] =>
  DispatchQueue.of({
    claim: (runner, owner, limit, leaseMs, agingMs) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const out: Array<ClaimedWorkflow> = []
        if (limit <= 0) return out
        const oldest = new Map<string, Array<Candidate>>()
        const onRunner = scan(table, runner, now, (w) => keepOldest(oldest, `${w.user_id}\u0000${w.priority}`, toCandidate(w), limit))
        const ranked = orderWaiting(Array.from(oldest.values()).flat(), onRunner, now, agingMs)
        for (const { workflow: { id } } of ranked.slice(0, limit)) {
          const w = table.byId.get(id)!
          table.claims.set(id, { owner, until: now + leaseMs })
          // Marked as possibly posted from now on: whoever claims it next asks the runner first.
          const marked = w.submitted_at === null ? { ...w, submitted_at: DateTime.unsafeMake(now) } : w
          if (marked !== w) table.replace(w, marked)
          out.push({ workflow: marked, resubmit: w.submitted_at !== null })
        }
        return out
      }),
    waitingOn: (runner, limit) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const waiting: Array<Candidate> = []
        const onRunner = scan(table, runner, now, (w) => {
          if (waiting.length < limit) waiting.push(toCandidate(w))
        })
        return { waiting, onRunner }
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
