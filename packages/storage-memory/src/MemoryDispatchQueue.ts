/**
 * Core's `DispatchQueue` over the memory store's table: claims are entries of the table's claim
 * map with an expiry; wake-ups go through a sliding PubSub (a slow dispatcher loses old wake-ups,
 * never work: its scan finds what they announced).
 */
import { type ClaimedWorkflow, DispatchQueue } from "@wes/core"
import * as Clock from "effect/Clock"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import * as Stream from "effect/Stream"
import type { WorkflowTable } from "./WorkflowTable.js"

export const makeMemoryDispatchQueue = (table: WorkflowTable, wakeups: PubSub.PubSub<string>) =>
  DispatchQueue.of({
    claim: (runner, owner, limit, leaseMs) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const out: Array<ClaimedWorkflow> = []
        for (const id of table.unfinishedByRunner.get(runner) ?? []) {
          if (out.length >= limit) break
          const w = table.byId.get(id)!
          if (w.status !== "accepted" && w.status !== "uploaded") continue
          const claim = table.claims.get(id)
          if (claim !== undefined && claim.until > now) continue
          table.claims.set(id, { owner, until: now + leaseMs })
          // Marked as possibly posted from now on: whoever claims it next asks the runner first.
          const marked = w.submitted_at === null ? { ...w, submitted_at: DateTime.unsafeMake(now) } : w
          if (marked !== w) table.replace(w, marked)
          out.push({ workflow: marked, resubmit: w.submitted_at !== null })
        }
        return out
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
