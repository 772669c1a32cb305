/**
 * Core's `RetentionRepository` over the memory store's tables: finished workflows not yet swept
 * and those whose events are kept (`WorkflowTable.unswept`, `eventsKept`: finished ones in the
 * order they ended), claims with a lease, the event log and the webhook outbox. Each call is one
 * synchronous step.
 */
import { type DueWorkflow, RetentionRepository, type Tier, type WorkflowOutput } from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import type { MemoryEventLog } from "./MemoryEventBus.js"
import type { WebhookTable } from "./MemoryWebhooks.js"
import type { WorkflowTable } from "./WorkflowTable.js"

const ms = DateTime.toEpochMillis

export const makeMemoryRetention = (
  table: WorkflowTable,
  log: MemoryEventLog,
  webhooks: WebhookTable,
  tierOf: (userId: string) => Tier | undefined
) => {
  /** Claims on due workflows: their lease's end (epoch ms). */
  const claims = new Map<string, number>()
  return RetentionRepository.of({
    claimDue: (cutoffs, _owner, now, leaseUntil, limit) =>
      Effect.sync(() => {
        const due: Array<DueWorkflow & { readonly end: number }> = []
        for (const id of table.unswept) {
          const w = table.byId.get(id)!
          const tier = tierOf(w.user_id) ?? "free"
          if (w.completed_at === null || ms(w.completed_at) > ms(cutoffs[tier]) || (claims.get(id) ?? 0) >= ms(now)) continue
          due.push({ id, tier, completed_at: w.completed_at, end: ms(w.completed_at) })
        }
        const taken = due.sort((a, b) => a.end - b.end).slice(0, limit)
        for (const d of taken) claims.set(d.id, ms(leaseUntil))
        return taken.map(({ completed_at, id, tier }) => ({ id, tier, completed_at }))
      }),
    markExpired: (expired) =>
      Effect.sync(() => {
        let workflows = 0
        let outputs = 0
        let output_bytes = 0
        for (const { expired_at, id } of expired) {
          claims.delete(id)
          if (!table.unswept.delete(id)) continue
          workflows++
          const list = table.outputs.get(id)
          if (list === undefined) continue
          table.outputs.set(id, list.map((o): WorkflowOutput => ({ ...o, expired_at })))
          outputs += list.length
          output_bytes += list.reduce((n, o) => n + o.size, 0)
        }
        return { workflows, outputs, output_bytes }
      }),
    pruneEvents: (before, limit) =>
      Effect.sync(() => {
        let workflows = 0
        let events = 0
        for (const id of table.eventsKept) {
          if (workflows >= limit) break
          const end = table.byId.get(id)!.completed_at
          if (end === null || ms(end) > ms(before)) continue
          table.eventsKept.delete(id)
          events += log.prune(id)
          workflows++
        }
        return { workflows, events }
      }),
    pruneDeliveries: (before, limit) =>
      Effect.sync(() => webhooks.prune(before, limit)),
    storedBytes: Effect.sync(() => {
      let bytes = 0
      for (const list of table.outputs.values()) for (const o of list) if (o.expired_at === null) bytes += o.size
      return bytes
    })
  })
}
