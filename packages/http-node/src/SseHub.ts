/**
 * Server-sent events, fanned out. However many clients follow a workflow, this server holds one
 * subscription to its event log (a fiber per followed workflow, in a `FiberMap`); each event is
 * encoded once and the same bytes are written to every client. A client that joins behind
 * (Last-Event-ID) first reads its gap from the log (a fiber in a `FiberSet`), then joins the live
 * feed at the right sequence, so nothing is skipped or repeated. Every fiber belongs to the hub's
 * scope; node's callbacks only start or interrupt them.
 *
 * A client is written to directly: its response's body is a node stream the hub writes into (no
 * Effect stream per connection; the server pipes it to the socket with node's backpressure).
 * Bounded: a client with more than `maxBufferedBytes` waiting gets a last comment saying why, its
 * stream ends, and its connection is cut if it has not drained `dropGrace` later; it resumes with
 * Last-Event-ID, from the log. One timer writes keep-alives to all. When the server begins to stop
 * (the `Shutdown` signal, before the listener closes) or the hub's scope closes, every stream
 * ends, so clients reconnect elsewhere.
 *
 * A client that asked for previews (`?previews=true`) also gets the workflow's live previews
 * (SsePreviews.ts): one subscription to `WorkflowPreviews` per followed workflow while such a
 * client follows it, each preview encoded once, each client with a slot of one.
 */
import { type FollowStart, READ_BATCH, sseSubscribers, type StorageError, type WorkflowEvent, WorkflowEventBus, WorkflowPreviews } from "@wes/core"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as FiberMap from "effect/FiberMap"
import * as FiberSet from "effect/FiberSet"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { PassThrough } from "node:stream"
import { Shutdown } from "./Shutdown.js"
import { encodePreview, offerPreview, type PreviewSlot, previewSlot } from "./SsePreviews.js"

/** One server-sent event. */
export const encodeSse = (e: WorkflowEvent): string => `id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`

/** Consecutive events as the bytes of one write. */
const encodeAll = (events: ReadonlyArray<WorkflowEvent>): Buffer => Buffer.from(events.map(encodeSse).join(""))

const KEEP_ALIVE = Buffer.from(": keep-alive\n\n")
const TOO_SLOW = Buffer.from(": too slow: this stream ends here; reconnect with Last-Event-ID to resume\n\n")

export interface SseHubOptions {
  /** A comment line this often keeps idle connections (and proxies) open. */
  readonly keepAlive: Duration.Input
  /** Bytes a client may fall behind before it is dropped (default 1 MiB). */
  readonly maxBufferedBytes?: number
  /** How long a dropped client has to take its last bytes before its socket is destroyed (default 5 s). */
  readonly dropGrace?: Duration.Input
}

/** Where a client's bytes go: its response's body (or any writable stream, in tests). */
export interface SseOut {
  readonly write: (bytes: Buffer) => unknown
  /** Bytes written but not yet taken by the socket. */
  readonly writableLength: number
  readonly writableFinished: boolean
  /** A write was refused (its buffer is full) and it has not drained since. */
  readonly writableNeedDrain: boolean
  readonly destroyed: boolean
  readonly end: () => unknown
  readonly destroy: () => unknown
  readonly once: (event: "close" | "drain", f: () => void) => unknown
}

interface Client {
  readonly out: SseOut
  /** The last sequence written to this client. */
  cursor: number
  /** Reading its gap from the log: live events are not written to it yet. */
  catchingUp: boolean
  ended: boolean
  /** Its preview slot, when it asked for previews. */
  readonly previews: PreviewSlot | undefined
}

interface Topic {
  readonly workflowId: string
  readonly clients: Set<Client>
  /** The last sequence the live feed has delivered. */
  seen: number
  feed: Fiber.Fiber<void> | undefined
  /** The workflow's previews, while a client of it asked for them. */
  previews: Fiber.Fiber<void> | undefined
  /** The last preview it delivered (encoded), for a client that asks for previews later. */
  lastPreview: Buffer | undefined
}

export class SseHub extends Context.Service<SseHub, {
  /**
   * The answer of a subscribe request: the workflow's events from `start` on, ending after `done`;
   * with `previews`, its live previews too.
   */
  readonly response: (workflowId: string, start: FollowStart, previews?: boolean) => HttpServerResponse.HttpServerResponse
  /** Follows a workflow onto `out` (what the response's body is). */
  readonly attach: (out: SseOut, workflowId: string, start: FollowStart, previews?: boolean) => void
  /** Open connections and followed workflows (for tests and metrics). */
  readonly stats: Effect.Effect<{ readonly clients: number; readonly workflows: number }>
}>()("@wes/http-node/SseHub") {
  static layer = (options: SseHubOptions): Layer.Layer<SseHub, never, WorkflowEventBus | WorkflowPreviews> => Layer.effect(SseHub, make(options))
}

const make = (options: SseHubOptions) =>
  Effect.gen(function*() {
    const bus = yield* WorkflowEventBus
    const previews = yield* WorkflowPreviews
    const feeds = yield* FiberMap.make<string>()
    const previewFeeds = yield* FiberMap.make<string>()
    const runPreviews = yield* FiberMap.runtime(previewFeeds)<never>()
    const tasks = yield* FiberSet.make()
    const runFeed = yield* FiberMap.runtime(feeds)<never>()
    const runTask = yield* FiberSet.runtime(tasks)<never>()
    const maxBuffered = options.maxBufferedBytes ?? 1024 * 1024
    const dropGrace = Duration.toMillis(options.dropGrace ?? "5 seconds")
    const topics = new Map<string, Topic>()
    // Counted from node's callbacks, in the context the hub was made in.
    const context = yield* Effect.context<never>()
    const subscribers = (n: number) => sseSubscribers.modifyUnsafe(n, context)
    // Registered at start, so a scrape shows it (at 0) before the first stream.
    subscribers(0)
    let closing = false

    const end = (client: Client) => {
      if (client.ended) return
      client.ended = true
      client.out.end()
    }

    /** A client that cannot keep up: told why, ended, and destroyed if its socket stays full. */
    const drop = (client: Client) => {
      client.ended = true
      client.out.write(TOO_SLOW)
      client.out.end()
      setTimeout(() => {
        if (!client.out.writableFinished && !client.out.destroyed) client.out.destroy()
      }, dropGrace).unref()
      runTask(Effect.logWarning("event stream client too slow: dropped (it can resume with Last-Event-ID)"))
    }

    /** Writes bytes to a client, dropping it when it has fallen too far behind. */
    const write = (client: Client, bytes: Buffer) => {
      if (client.ended) return
      client.out.write(bytes)
      if (client.out.writableLength > maxBuffered) drop(client)
    }

    /**
     * Writes consecutive `events`, the client's next ones, as `bytes` (their encoding, shared by
     * every client level with them): one write, however many.
     */
    const deliver = (client: Client, events: ReadonlyArray<WorkflowEvent>, bytes: Buffer) => {
      const last = events[events.length - 1]!
      client.cursor = last.seq
      write(client, bytes)
      if (last.type === "done") end(client)
    }

    /** Those of `events` after the client's cursor, if any, as one write of their own. */
    const deliverAfterCursor = (client: Client, events: ReadonlyArray<WorkflowEvent>) => {
      const next = events.filter((e) => e.seq > client.cursor)
      if (next.length > 0) deliver(client, next, encodeAll(next))
    }

    /** The workflow's previews to each of its clients that asked for them, encoded once. */
    const previewFeed = (topic: Topic) =>
      previews.subscribe(topic.workflowId).pipe(
        Stream.runForEach((p) =>
          Effect.sync(() => {
            const bytes = encodePreview(p)
            topic.lastPreview = bytes
            for (const client of topic.clients) {
              if (client.previews !== undefined && !client.ended) offerPreview(client.out, client.previews, bytes, () => client.ended)
            }
          })
        ),
        Effect.catch((e: StorageError) => Effect.logWarning("preview stream failed", { workflow_id: topic.workflowId, error: e.message }))
      )

    /** Stops the topic's previews when no client of it wants them any more. */
    const stopPreviews = (topic: Topic) => {
      if (topic.previews === undefined || [...topic.clients].some((c) => c.previews !== undefined && !c.ended)) return
      topic.previews.interruptUnsafe()
      topic.previews = undefined
      topic.lastPreview = undefined
    }

    const detach = (topic: Topic, client: Client) => {
      if (topic.clients.delete(client)) subscribers(-1)
      stopPreviews(topic)
      if (topic.clients.size === 0 && topics.get(topic.workflowId) === topic) {
        topics.delete(topic.workflowId)
        topic.feed?.interruptUnsafe()
      }
    }

    /**
     * Writes what the feed delivered at once (consecutive events, one publish or one read of the
     * log) as one buffer for every client level with the feed, so a feed that falls behind
     * catches up with fewer writes. A client that caught up past part of them takes the rest.
     */
    const broadcast = (topic: Topic, chunk: ReadonlyArray<WorkflowEvent>) => {
      const events = chunk.filter((e) => e.seq > topic.seen)
      if (events.length === 0) return
      topic.seen = events[events.length - 1]!.seq
      const bytes = encodeAll(events)
      for (const client of topic.clients) {
        if (client.catchingUp) continue
        if (client.cursor < events[0]!.seq) deliver(client, events, bytes)
        else deliverAfterCursor(client, events)
      }
    }

    /** The live feed of a workflow: ends every client when it ends or fails. */
    const feed = (topic: Topic) =>
      bus.subscribe(topic.workflowId, topic.seen).pipe(
        Stream.takeUntil((e) => e.type === "done"),
        Stream.runForEachArray((chunk) => Effect.sync(() => broadcast(topic, chunk))),
        Effect.catch((e: StorageError) => Effect.logWarning("event stream failed", { workflow_id: topic.workflowId, error: e.message })),
        Effect.ensuring(Effect.sync(() => {
          if (topics.get(topic.workflowId) === topic) topics.delete(topic.workflowId)
          for (const client of topic.clients) end(client)
          stopPreviews(topic)
        }))
      )

    /** Reads a client's gap from the log until it is level with the live feed, then joins it. */
    const catchUp = (topic: Topic, client: Client): Effect.Effect<void, StorageError> =>
      Effect.gen(function*() {
        while (!client.ended) {
          if (client.cursor >= topic.seen) {
            client.catchingUp = false
            return
          }
          const events = yield* bus.read(topic.workflowId, client.cursor, READ_BATCH)
          if (events.length === 0) {
            // The log has nothing after the cursor (trimmed): join the live feed as it is.
            client.cursor = Math.max(client.cursor, topic.seen)
            client.catchingUp = false
            return
          }
          deliverAfterCursor(client, events)
        }
      })

    const attach = (out: SseOut, workflowId: string, start: FollowStart, withPreviews = false) => {
      const client: Client = { out, cursor: 0, catchingUp: false, ended: false, previews: withPreviews ? previewSlot() : undefined }
      if (start.first.length > 0) write(client, encodeAll(start.first))
      if (Option.isNone(start.after) || closing) return end(client)
      client.cursor = start.after.value
      let topic = topics.get(workflowId)
      if (topic === undefined) {
        const created: Topic = { workflowId, clients: new Set(), seen: client.cursor, feed: undefined, previews: undefined, lastPreview: undefined }
        topics.set(workflowId, created)
        created.feed = runFeed(workflowId, feed(created))
        topic = created
      }
      const joined = topic
      joined.clients.add(client)
      subscribers(1)
      if (withPreviews && joined.previews === undefined) joined.previews = runPreviews(workflowId, previewFeed(joined))
      else if (client.previews !== undefined && joined.lastPreview !== undefined) offerPreview(out, client.previews, joined.lastPreview, () => client.ended)
      const leave = () => {
        client.ended = true
        detach(joined, client)
      }
      out.once("close", leave)
      if (out.destroyed) return leave()
      if (client.cursor < joined.seen) {
        client.catchingUp = true
        runTask(catchUp(joined, client).pipe(
          Effect.catch((e) =>
            Effect.andThen(
              Effect.logWarning("event stream failed", { workflow_id: workflowId, error: e.message }),
              Effect.sync(() => end(client))
            ))
        ))
      }
    }

    const response = (workflowId: string, start: FollowStart, withPreviews = false) => {
      // The server pipes it to the socket (pausing it while the socket is full) and destroys it
      // when the client leaves: its own buffer is what the client has not taken yet.
      const body = new PassThrough()
      attach(body, workflowId, start, withPreviews)
      return HttpServerResponse.raw(body, {
        contentType: "text/event-stream",
        headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
      })
    }

    // One timer for every connection's keep-alive.
    const keepAlive = Effect.sync(() => {
      for (const topic of topics.values()) for (const client of topic.clients) if (!client.catchingUp) write(client, KEEP_ALIVE)
    }).pipe(Effect.repeat(Schedule.spaced(options.keepAlive)))
    yield* Effect.forkScoped(Effect.delay(keepAlive, options.keepAlive))

    // Shutdown ends every stream; a stream opened after that gets its first events and ends. The
    // feeds end with the FiberMap. The server's `Shutdown` signal comes before the listener
    // closes, so the listener does not wait for streams that would never end by themselves.
    const closeAll = Effect.sync(() => {
      closing = true
      for (const topic of topics.values()) for (const client of topic.clients) end(client)
      topics.clear()
    })
    const shutdown = yield* Effect.serviceOption(Shutdown)
    if (Option.isSome(shutdown)) yield* Effect.forkScoped(Effect.andThen(Deferred.await(shutdown.value.signal), closeAll))
    yield* Effect.addFinalizer(() => closeAll)

    return SseHub.of({
      response,
      attach,
      stats: Effect.sync(() => {
        let clients = 0
        for (const topic of topics.values()) clients += topic.clients.size
        return { clients, workflows: topics.size }
      })
    })
  })
