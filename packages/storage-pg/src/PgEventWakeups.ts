/**
 * Wake-ups for event subscribers of this process, fed by the store's LISTEN connection
 * (`PgListener.ts`).
 *
 * A notification's payload is a workflow id, followed, when the publish fitted in NOTIFY's 8 KB,
 * by the events it logged (`<id> <first seq> {"at":..., "events":[...]}`): a subscriber level
 * with the log takes them as they are, without reading the table (core's `subscribeFromLog`);
 * any other subscriber, and every wake-up of an id alone (state transitions), reads the table.
 * A notification can therefore be lost without losing an event, as long as every subscriber
 * re-reads after the loss; so after every (re)connection of the LISTEN connection, all
 * registered subscribers are woken with nothing carried.
 */
import type { PgClient } from "@effect/sql-pg"
import { makeWakeUps, type WakeUp, WorkflowEvent } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { type ListenChannel, type PgListenOptions, startListener } from "./PgListener.js"

/** The default NOTIFY channel of workflow events. */
export const DEFAULT_EVENTS_CHANNEL = "wes_events"

/** Options of the event bus's LISTEN/NOTIFY wake-ups. */
export interface PgEventBusOptions extends PgListenOptions {
  /** The NOTIFY channel (default `wes_events`); every instance sharing a database must use the same. */
  readonly channel?: string | undefined
}

export interface EventWakeups {
  /** The channel events are announced on. */
  readonly channel: string
  /** Registers interest in a workflow for the life of the scope; the inner effect waits for the next wake-up. */
  readonly listen: (workflowId: string) => Effect.Effect<Effect.Effect<WakeUp>, never, Scope.Scope>
}

/** The part of a payload after the id and first sequence, as `PgEventBus` writes it. */
const Carried = Schema.fromJsonString(Schema.Struct({
  at: Schema.String,
  events: Schema.Array(Schema.Struct({ type: Schema.String, data: Schema.Unknown }))
}))
const decodeCarried = Schema.decodeUnknownExit(Carried)
// The JSON form of the events (`toCodecJson`: the timestamp as an ISO string, as the payload carries it).
const decodeEvents = Schema.decodeUnknownExit(Schema.toCodecJson(Schema.Array(WorkflowEvent)))

/** The events a payload carries (none for an id alone, or anything unreadable: the table is read). */
export const carriedEvents = (id: string, rest: string): WakeUp => {
  const space = rest.indexOf(" ")
  const first = Number(rest.slice(0, space))
  if (space === -1 || !Number.isSafeInteger(first)) return undefined
  const carried = decodeCarried(rest.slice(space + 1))
  if (Exit.isFailure(carried)) return undefined
  const { at, events } = carried.value
  const decoded = decodeEvents(events.map((e, i) => ({ workflow_id: id, seq: first + i, type: e.type, data: e.data, created_at: at })))
  return Exit.isSuccess(decoded) ? decoded.value : undefined
}

/**
 * The subscriber registry of `channel`: `wakeups` for the event bus, `listen` for the listener
 * that feeds it.
 */
export const eventWakeupsOn = (channel: string): { readonly wakeups: EventWakeups; readonly listen: ListenChannel } => {
  /** The subscribers, by lowercase workflow id. */
  const wakeUps = makeWakeUps()
  return {
    listen: {
      channel,
      onPayload: (payload) =>
        Effect.sync(() => {
          const space = payload.indexOf(" ")
          const id = (space === -1 ? payload : payload.slice(0, space)).toLowerCase()
          // Read once for every subscriber of the workflow on this instance, and only if there is one.
          if (wakeUps.listening(id)) wakeUps.wake(id, space === -1 ? undefined : carriedEvents(id, payload.slice(space + 1)))
        }),
      onConnected: Effect.sync(wakeUps.wakeAll)
    },
    wakeups: { channel, listen: (workflowId) => wakeUps.listen(workflowId.toLowerCase()) }
  }
}

/** Event wake-ups with a LISTEN connection of their own, for the life of the scope. */
export const makeEventWakeups = (
  options: PgEventBusOptions = {}
): Effect.Effect<EventWakeups, never, PgClient.PgClient | Scope.Scope> =>
  Effect.gen(function*() {
    const { listen, wakeups } = eventWakeupsOn(options.channel ?? DEFAULT_EVENTS_CHANNEL)
    yield* startListener([listen], options)
    return wakeups
  })
