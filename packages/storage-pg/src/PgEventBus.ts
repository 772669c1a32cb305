/**
 * The workflow event log in PostgreSQL, announced with NOTIFY. Any instance's subscribers see
 * events any instance published: the NOTIFY carries the events when they fit (PgEventWakeups.ts),
 * and a subscriber that cannot take them from there reads the table.
 */
import { PgClient } from "@effect/sql-pg"
import { StorageError, subscribeFromLog, type WorkflowEvent, WorkflowEventBus } from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type EventWakeups, makeEventWakeups, type PgEventBusOptions } from "./PgEventWakeups.js"
import { isId, orStorageError, run, toDate, toJson } from "./Sql.js"
import { tableOn } from "./Table.js"
import { workflowEvents } from "./Tables.js"

/** NOTIFY's limit is 8,000 bytes; the id, the first sequence and two spaces come first. */
const MAX_CARRIED_BYTES = 7_900

/** A bus on the `PgClient` in context whose subscribers `wakeups` wakes. */
export const makePgEventBusWith = (wakeups: EventWakeups) =>
  Effect.gen(function*() {
    const sql = yield* PgClient.PgClient
    const log = tableOn(sql, workflowEvents)

    const read = (workflowId: string, afterSeq: number, limit: number) =>
      isId(workflowId)
        ? run(sql`${log.select(sql`workflow_id = ${workflowId} AND seq > ${afterSeq}`)} ORDER BY seq LIMIT ${limit}`).pipe(
          Effect.flatMap(log.decodeRows),
          orStorageError("events.read")
        )
        : Effect.succeed([])

    return WorkflowEventBus.of({
      publish: (workflowId, events) => {
        if (events.length === 0) return Effect.succeed([])
        if (!isId(workflowId)) {
          return Effect.fail(new StorageError({ message: "PostgreSQL store: events.publish needs a UUID workflow id" }))
        }
        // One statement, so one round trip and atomic without a transaction of its own: it takes
        // the sequence numbers (the head row's lock orders concurrent publishers of one workflow
        // until they commit), inserts the events and queues the NOTIFY, which PostgreSQL delivers
        // at commit, so a woken subscriber finds the rows. Inside a caller's transaction (a state
        // transition) all three commit or roll back with it.
        return Effect.gen(function*() {
          const now = yield* DateTime.now
          const n = events.length
          // The events ride along in the NOTIFY when they fit; else the id alone wakes readers.
          const carried = JSON.stringify({ at: DateTime.formatIso(now), events: events.map((e) => ({ type: e.type, data: e.data ?? null })) })
          const tail = Buffer.byteLength(carried) <= MAX_CARRIED_BYTES ? carried : ""
          const rows = yield* run(sql<{ last_seq: number }>`WITH head AS (
              INSERT INTO workflow_event_heads (workflow_id, last_seq) VALUES (${workflowId}, ${n})
              ON CONFLICT (workflow_id) DO UPDATE SET last_seq = workflow_event_heads.last_seq + EXCLUDED.last_seq
              RETURNING last_seq
            ), logged AS (
              INSERT INTO workflow_events (workflow_id, seq, type, data, created_at)
              SELECT ${workflowId}::uuid, head.last_seq - ${n}::int + e.ord::int, e.value->>'type', e.value->'data', ${toDate(now)}::timestamptz
              FROM head, jsonb_array_elements(${toJson(events.map((e) => ({ type: e.type, data: e.data ?? null })))}::jsonb)
                WITH ORDINALITY AS e(value, ord)
            )
            SELECT last_seq, pg_notify(${wakeups.channel}::text, CASE WHEN ${tail}::text = '' THEN ${workflowId.toLowerCase()}::text
              ELSE ${workflowId.toLowerCase()}::text || ' ' || (last_seq - ${n}::int + 1)::text || ' ' || ${tail}::text END) FROM head`).pipe(
            orStorageError("events.publish")
          )
          const first = (rows[0]?.last_seq ?? n) - n + 1
          return events.map((e, i): WorkflowEvent => ({
            workflow_id: workflowId,
            seq: first + i,
            type: e.type,
            data: e.data,
            created_at: now
          }))
        })
      },
      read,
      lastSeq: (workflowId) =>
        isId(workflowId)
          ? run(sql<{ last_seq: number }>`SELECT last_seq FROM workflow_event_heads WHERE workflow_id = ${workflowId}`).pipe(
            Effect.map((rows) => rows[0]?.last_seq ?? 0),
            orStorageError("events.lastSeq")
          )
          : Effect.succeed(0),
      subscribe: subscribeFromLog(read, wakeups.listen)
    })
  })

/** A bus on the `PgClient` in context with a LISTEN connection of its own, for the life of the scope. */
export const makePgEventBus = (options: PgEventBusOptions = {}) =>
  Effect.flatMap(makeEventWakeups(options), makePgEventBusWith)

/**
 * `WorkflowEventBus` alone on the `PgClient` in context (one LISTEN connection while the layer
 * lives). With the dispatch queue, use `layerPgWorkflows`, which shares one
 * connection: two listeners on one client would keep each other's dead connection alive.
 */
export const layerPgEventBus = (options: PgEventBusOptions = {}): Layer.Layer<WorkflowEventBus, never, PgClient.PgClient> =>
  Layer.effect(WorkflowEventBus, makePgEventBus(options))
