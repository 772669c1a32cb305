/**
 * Wake-ups for event subscribers of this process, fed by the store's LISTEN connection
 * (`PgListener.ts`).
 *
 * NOTIFY is only a wake-up: the payload is a workflow id, and a woken subscriber reads the
 * events from the table. A notification can therefore be lost without losing an event, as long
 * as every subscriber re-reads after the loss; so after every (re)connection of the LISTEN
 * connection, all registered subscribers are woken.
 */
import type { PgClient } from "@effect/sql-pg"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
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
  readonly listen: (workflowId: string) => Effect.Effect<Effect.Effect<void>, never, Scope.Scope>
}

/**
 * The subscriber registry of `channel`: `wakeups` for the event bus, `listen` for the listener
 * that feeds it.
 */
export const eventWakeupsOn = (channel: string): { readonly wakeups: EventWakeups; readonly listen: ListenChannel } => {
  /** One-slot sliding queues of the subscribers, by lowercase workflow id. */
  const subscribers = new Map<string, Set<Queue.Queue<void>>>()
  const wake = (queues: Iterable<Queue.Queue<void>>) => {
    for (const queue of queues) Queue.unsafeOffer(queue, undefined)
  }
  return {
    listen: {
      channel,
      onPayload: (payload) =>
        Effect.sync(() => {
          const queues = subscribers.get(payload.toLowerCase())
          if (queues !== undefined) wake(queues)
        }),
      onConnected: Effect.sync(() => {
        for (const queues of subscribers.values()) wake(queues)
      })
    },
    wakeups: {
      channel,
      listen: (workflowId) =>
        Effect.acquireRelease(
          Effect.map(Queue.sliding<void>(1), (queue) => {
            const key = workflowId.toLowerCase()
            let queues = subscribers.get(key)
            if (queues === undefined) {
              queues = new Set()
              subscribers.set(key, queues)
            }
            queues.add(queue)
            return { key, queue }
          }),
          ({ key, queue }) =>
            Effect.suspend(() => {
              const queues = subscribers.get(key)
              queues?.delete(queue)
              if (queues?.size === 0) subscribers.delete(key)
              return Queue.shutdown(queue)
            })
        ).pipe(Effect.map(({ queue }) => Queue.take(queue)))
    }
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
