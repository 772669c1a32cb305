/**
 * The workflow event log in memory. Each workflow keeps its most recent events (a bounded log);
 * subscribers wait on a one-slot sliding queue, so a publish never blocks and a slow subscriber
 * costs one pending wake-up, not a buffer.
 */
import { makeWakeUps, type NewWorkflowEvent, subscribeFromLog, type WorkflowEvent, WorkflowEventBus } from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** Events kept per workflow; older ones are dropped (a replay then starts at the oldest kept). */
export const DEFAULT_EVENTS_PER_WORKFLOW = 10_000

interface Log {
  events: Array<WorkflowEvent>
  /** Sequence of `events[0]`. */
  first: number
  last: number
}

/**
 * The log and its bus. `append` writes events synchronously, so the workflow store logs a
 * transition's events in the same step as the transition itself.
 */
export const makeMemoryEventLog = (capacity = DEFAULT_EVENTS_PER_WORKFLOW) => {
  const logs = new Map<string, Log>()
  const wakeUps = makeWakeUps()

  const read = (workflowId: string, afterSeq: number, limit: number) =>
    Effect.sync((): ReadonlyArray<WorkflowEvent> => {
      const log = logs.get(workflowId)
      if (log === undefined || afterSeq >= log.last) return []
      const start = Math.max(0, afterSeq - log.first + 1)
      return log.events.slice(start, start + limit)
    })

  const append = (workflowId: string, events: ReadonlyArray<NewWorkflowEvent>, now: DateTime.Utc): ReadonlyArray<WorkflowEvent> => {
    if (events.length === 0) return []
    let log = logs.get(workflowId)
    if (log === undefined) {
      log = { events: [], first: 1, last: 0 }
      logs.set(workflowId, log)
    }
    const added: Array<WorkflowEvent> = []
    for (const e of events) added.push({ workflow_id: workflowId, seq: ++log.last, type: e.type, data: e.data, created_at: now })
    log.events.push(...added)
    const excess = log.events.length - capacity
    if (excess > 0) {
      log.events.splice(0, excess)
      log.first += excess
    }
    // The wake-up carries the events: a subscriber level with the log takes them without a read.
    wakeUps.wake(workflowId, added)
    return added
  }

  const bus = WorkflowEventBus.of({
    publish: (workflowId, events) => Effect.map(DateTime.now, (now) => append(workflowId, events, now)),
    read,
    lastSeq: (workflowId) => Effect.sync(() => logs.get(workflowId)?.last ?? 0),
    subscribe: subscribeFromLog(read, wakeUps.listen)
  })
  /** Drops a workflow's events, keeping its last sequence number; how many were dropped. */
  const prune = (workflowId: string): number => {
    const log = logs.get(workflowId)
    if (log === undefined) return 0
    const dropped = log.events.length
    log.events = []
    log.first = log.last + 1
    return dropped
  }

  return { bus, append, prune }
}

export type MemoryEventLog = ReturnType<typeof makeMemoryEventLog>

export const MemoryEventBus: Layer.Layer<WorkflowEventBus> = Layer.sync(WorkflowEventBus, () => makeMemoryEventLog().bus)
