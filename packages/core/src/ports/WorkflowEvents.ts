/**
 * The per-workflow event stream (design.md section 7). Every event has a sequence number that
 * starts at 1 and grows by one per workflow. Subscribers read from the log after the last
 * sequence they saw and wait for a wake-up when they are level with it: a slow subscriber only
 * reads later, so it neither buffers without bound nor delays anyone else.
 */
import * as DateTime from "effect/DateTime"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { StorageError } from "../domain/Errors.js"
import { Timestamp } from "../domain/Json.js"
import { toSummary, type WorkflowHead, type WorkflowOutput, WorkflowOutputView, WorkflowSummary } from "../domain/Workflow.js"
import { type TransitionPlan, withCarried } from "../domain/WorkflowStatus.js"

export const WorkflowEventType = Schema.Literals(["status", "queue", "progress", "executing", "output", "retry", "provisioning", "done"])
export type WorkflowEventType = typeof WorkflowEventType.Type

export const WorkflowEvent = Schema.Struct({
  workflow_id: Schema.String,
  seq: Schema.Int,
  type: WorkflowEventType,
  data: Schema.Unknown,
  created_at: Timestamp
}).annotate({ identifier: "WorkflowEvent" })
export interface WorkflowEvent extends Schema.Schema.Type<typeof WorkflowEvent> {}

/** An event before the log numbers it. */
export interface NewWorkflowEvent {
  readonly type: WorkflowEventType
  readonly data: unknown
}

const encodeSummary = Schema.encodeSync(WorkflowSummary)
const encodeOutput = Schema.encodeSync(WorkflowOutputView)

/** ISO strings of timestamps already formatted (a workflow's `created_at` goes out with each of its events). */
const isoOf = new WeakMap<DateTime.Utc, string>()
const iso = (t: DateTime.Utc): string => {
  let s = isoOf.get(t)
  if (s === undefined) {
    s = DateTime.formatIso(t)
    isoOf.set(t, s)
  }
  return s
}

/**
 * The data of a `status` / `done` event: the workflow's summary as the contract encodes it
 * (`WorkflowSummary`). Written out rather than run through the schema's encoder, which was 5 % of
 * the CPU of a dispatch burn-down (five summaries per workflow); a test holds the two equal.
 */
export const summaryData = (w: WorkflowHead): unknown => ({
  id: w.id,
  name: w.name,
  status: w.status,
  tags: [...w.tags],
  created_at: iso(w.created_at),
  updated_at: iso(w.updated_at),
  started_at: w.started_at === null ? null : iso(w.started_at),
  completed_at: w.completed_at === null ? null : iso(w.completed_at)
})

/** `summaryData` through the schema's encoder: what it must equal (tests). */
export const encodedSummary = (w: WorkflowHead): unknown => encodeSummary(toSummary(w))

/** The data of an `output` event: the output as the outputs endpoint lists it. */
export const outputData = (o: WorkflowOutput): unknown =>
  encodeOutput({
    id: o.id,
    node_id: o.node_id,
    filename: o.filename,
    subfolder: o.subfolder,
    type: o.type,
    content_type: o.content_type,
    size: o.size,
    expired_at: o.expired_at
  })

/**
 * The events a transition logs, given the workflow after it: the events of the moves before the
 * last, then the leading events it carries, one `output` per recorded output, and the last move's
 * events (PostgreSQL builds the same list in SQL; the conformance suite holds the two together).
 */
export const transitionEvents = (
  plan: TransitionPlan,
  after: WorkflowHead,
  outputs: ReadonlyArray<WorkflowOutput>,
  leading: ReadonlyArray<NewWorkflowEvent> = []
): ReadonlyArray<NewWorkflowEvent> => {
  const planned = plan.events.map((e): NewWorkflowEvent =>
    e.type === "queue" || e.type === "retry" ? { type: e.type, data: e.data } : { type: e.type, data: summaryData({ ...after, ...e.override }) }
  )
  return withCarried(plan, planned, [...leading, ...outputs.map((o): NewWorkflowEvent => ({ type: "output", data: outputData(o) }))])
}

/** How many events a subscriber reads from the log at a time. */
export const READ_BATCH = 256

export class WorkflowEventBus extends Context.Service<WorkflowEventBus, {
  /** Appends events to a workflow's log (consecutive sequence numbers) and wakes its subscribers. */
  readonly publish: (
    workflowId: string,
    events: ReadonlyArray<NewWorkflowEvent>
  ) => Effect.Effect<ReadonlyArray<WorkflowEvent>, StorageError>
  /** Events with a sequence greater than `afterSeq`, in order, at most `limit`. */
  readonly read: (
    workflowId: string,
    afterSeq: number,
    limit: number
  ) => Effect.Effect<ReadonlyArray<WorkflowEvent>, StorageError>
  /** The sequence number of the workflow's latest event (0 when none). */
  readonly lastSeq: (workflowId: string) => Effect.Effect<number, StorageError>
  /** Every event after `afterSeq`, then new ones as they are published; never ends by itself. */
  readonly subscribe: (workflowId: string, afterSeq: number) => Stream.Stream<WorkflowEvent, StorageError>
}>()("@wes/core/WorkflowEventBus") {}

/**
 * What a wake-up says: the events of the publish that woke the subscriber, when the bus carries
 * them (in order, consecutive), or `undefined` (something was published: read the log).
 */
export type WakeUp = ReadonlyArray<WorkflowEvent> | undefined

/** A subscriber's pending wake-up (see `makeWakeUpSlot`). */
export interface WakeUpSlot {
  /** Never blocks: a wake-up that finds the slot taken is merged with it. */
  readonly offer: (wakeUp: WakeUp) => void
  readonly take: Effect.Effect<WakeUp>
  readonly shutdown: Effect.Effect<void>
}

/**
 * One slot, so a publish never blocks and a slow subscriber costs one pending wake-up, not a
 * buffer. Wake-ups that find the slot taken are merged into one that carries nothing, so the
 * subscriber reads the log and no publish is ever passed over.
 */
export const makeWakeUpSlot: Effect.Effect<WakeUpSlot> = Effect.map(Queue.bounded<WakeUp>(1), (queue) => {
  let merged = false
  return {
    offer: (wakeUp) => {
      if (!Queue.offerUnsafe(queue, wakeUp)) merged = true
    },
    take: Effect.map(Queue.take(queue), (wakeUp) => {
      if (!merged) return wakeUp
      merged = false
      return undefined
    }),
    shutdown: Queue.shutdown(queue)
  }
})

/**
 * The subscribers of a bus, by workflow: `listen` gives each its own slot for the life of its
 * scope (the `listen` of `subscribeFromLog`); `wake` offers a wake-up to every subscriber of a
 * workflow, `wakeAll` an empty one to all (what was announced while nobody could hear is read
 * again). Keys are compared as given: a bus that receives ids in another case normalises them.
 */
export const makeWakeUps = () => {
  const subscribers = new Map<string, Set<WakeUpSlot>>()
  return {
    listen: (key: string): Effect.Effect<Effect.Effect<WakeUp>, never, Scope.Scope> =>
      Effect.acquireRelease(
        Effect.map(makeWakeUpSlot, (slot) => {
          let slots = subscribers.get(key)
          if (slots === undefined) {
            slots = new Set()
            subscribers.set(key, slots)
          }
          slots.add(slot)
          return slot
        }),
        (slot) =>
          Effect.suspend(() => {
            const slots = subscribers.get(key)
            slots?.delete(slot)
            if (slots?.size === 0) subscribers.delete(key)
            return slot.shutdown
          })
      ).pipe(Effect.map((slot) => slot.take)),
    /** Whether anyone listens for `key` (to skip work a wake-up would need). */
    listening: (key: string): boolean => subscribers.has(key),
    wake: (key: string, wakeUp: WakeUp): void => {
      for (const slot of subscribers.get(key) ?? []) slot.offer(wakeUp)
    },
    wakeAll: (): void => {
      for (const slots of subscribers.values()) for (const slot of slots) slot.offer(undefined)
    }
  }
}

/**
 * Builds `subscribe` from a log reader and a wake-up source. `listen` registers interest in a
 * workflow for the life of the scope and returns an effect that completes at the next publish
 * after registration (or at once if one happened since the last wait). Registering before the
 * first read means no event published in between is missed. Events a wake-up carries are taken
 * as they are when they follow the last one seen, without reading the log; anything else (a
 * wake-up without events, or events after a gap: a wake-up the one-slot queue replaced, a
 * notification lost with its connection) sends the subscriber back to the log.
 */
export const subscribeFromLog = (
  read: (workflowId: string, afterSeq: number, limit: number) => Effect.Effect<ReadonlyArray<WorkflowEvent>, StorageError>,
  listen: (workflowId: string) => Effect.Effect<Effect.Effect<WakeUp>, never, Scope.Scope>
) =>
(workflowId: string, afterSeq: number): Stream.Stream<WorkflowEvent, StorageError> =>
  Stream.unwrap(Effect.map(listen(workflowId), (wake) => {
    /** The last sequence seen, and whether the log must be read before waiting again. */
    interface Position {
      readonly last: number
      readonly read: boolean
    }
    const emit = (events: ReadonlyArray<WorkflowEvent>, last: number, read: boolean) =>
      [
        events.slice(),
        Option.some<Position>({ last: events.length === 0 ? last : events[events.length - 1]!.seq, read })
      ] as const
    const waitFrom = (last: number) =>
      Effect.map(wake, (carried) => {
        const fresh = carried?.filter((e) => e.seq > last)
        return fresh !== undefined && (fresh.length === 0 || fresh[0]!.seq === last + 1) ? emit(fresh, last, false) : emit([], last, true)
      })
    return Stream.paginate<Position, WorkflowEvent, StorageError, never>({ last: afterSeq, read: true }, ({ last, read: mustRead }) =>
      mustRead
        ? Effect.flatMap(read(workflowId, last, READ_BATCH), (events) => (events.length === 0 ? waitFrom(last) : Effect.succeed(emit(events, last, true))))
        : waitFrom(last))
  }))
