/**
 * Server-sent events, fanned out. However many clients follow a workflow, this server holds one
 * subscription to its event log; each event is encoded once and written to every client as the
 * same bytes. A client that joins behind (Last-Event-ID) first reads the gap from the log, then
 * joins the live feed at the right sequence, so nothing is skipped or repeated.
 *
 * Bounded: a client whose socket cannot keep up (more than `maxBufferedBytes` waiting) is
 * disconnected; it resumes with Last-Event-ID, from the log. One timer writes keep-alives to all.
 * When the server stops, every stream ends before the listener closes, so clients reconnect.
 */
import {
  type FollowStart,
  READ_BATCH,
  type StorageError,
  type WorkflowEvent,
  WorkflowEventBus
} from "@wes/core"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Runtime from "effect/Runtime"
import * as Context from "effect/Context"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type { ServerResponse } from "node:http"
import { Readable } from "node:stream"

/** One server-sent event. */
export const encodeSse = (e: WorkflowEvent): string => `id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`

const KEEP_ALIVE = Buffer.from(": keep-alive\n\n")

export interface SseHubOptions {
  /** A comment line this often keeps idle connections (and proxies) open. */
  readonly keepAlive: Duration.DurationInput
  /** Bytes a client may fall behind before it is disconnected (default 1 MiB). */
  readonly maxBufferedBytes?: number
}

/** Where a client's bytes go: a stream the HTTP framework pipes out, or the response itself. */
interface Sink {
  readonly write: (bytes: Buffer) => void
  /** Bytes written but not yet taken by the socket. */
  readonly buffered: () => number
  readonly end: () => void
  readonly destroy: () => void
  readonly onClose: (f: () => void) => void
}

const readableSink = (out: Readable): Sink => ({
  write: (bytes) => void out.push(bytes),
  buffered: () => out.readableLength,
  end: () => void out.push(null),
  destroy: () => void out.destroy(),
  onClose: (f) => void out.once("close", f)
})

const responseSink = (res: ServerResponse): Sink => ({
  write: (bytes) => void res.write(bytes),
  buffered: () => res.writableLength,
  end: () => void res.end(),
  destroy: () => void res.destroy(),
  onClose: (f) => {
    if (res.destroyed || res.socket === null || res.socket.destroyed) f()
    else res.once("close", f)
  }
})

interface Client {
  readonly out: Sink
  /** The last sequence written to this client. */
  cursor: number
  /** Reading its gap from the log: live events are not written to it yet. */
  catchingUp: boolean
  ended: boolean
}

interface Topic {
  readonly workflowId: string
  readonly clients: Set<Client>
  /** The last sequence the live feed has delivered. */
  seen: number
  fiber: Fiber.RuntimeFiber<void> | undefined
}

export class SseHub extends Context.Tag("@wes/http-node/SseHub")<SseHub, {
  /** A byte stream of the workflow's events, from `start` on, ending after `done`. */
  readonly open: (workflowId: string, start: FollowStart) => Effect.Effect<Readable>
  /**
   * The same, written straight to a response whose head the caller has written: nothing of the
   * request handler stays in memory while the client follows.
   */
  readonly attach: (res: ServerResponse, workflowId: string, start: FollowStart) => void
  /** Open connections and followed workflows (for tests and metrics). */
  readonly stats: Effect.Effect<{ readonly clients: number; readonly workflows: number }>
}>() {
  static layer = (options: SseHubOptions): Layer.Layer<SseHub, never, WorkflowEventBus> =>
    Layer.scoped(SseHub, make(options))
}

const make = (options: SseHubOptions) =>
  Effect.gen(function*() {
    const bus = yield* WorkflowEventBus
    const runtime = yield* Effect.runtime<never>()
    const run = Runtime.runFork(runtime)
    const maxBuffered = options.maxBufferedBytes ?? 1024 * 1024
    const topics = new Map<string, Topic>()
    let closing = false

    const end = (client: Client) => {
      if (client.ended) return
      client.ended = true
      client.out.end()
    }

    /** Writes bytes to a client, disconnecting it when it has fallen too far behind. */
    const write = (client: Client, bytes: Buffer) => {
      if (client.ended) return
      client.out.write(bytes)
      if (client.out.buffered() > maxBuffered) {
        client.ended = true
        run(Effect.logWarning("event stream client too slow: disconnected (it can resume with Last-Event-ID)"))
        client.out.destroy()
      }
    }

    /** Writes `event` if it is the client's next one; `bytes` is its encoding, shared by all. */
    const deliver = (client: Client, event: WorkflowEvent, bytes: Buffer) => {
      if (event.seq <= client.cursor) return
      client.cursor = event.seq
      write(client, bytes)
      if (event.type === "done") end(client)
    }

    const detach = (topic: Topic, client: Client) => {
      topic.clients.delete(client)
      if (topic.clients.size === 0 && topics.get(topic.workflowId) === topic) {
        topics.delete(topic.workflowId)
        const fiber = topic.fiber
        topic.fiber = undefined
        if (fiber !== undefined) run(Fiber.interrupt(fiber))
      }
    }

    const broadcast = (topic: Topic, event: WorkflowEvent) => {
      if (event.seq <= topic.seen) return
      topic.seen = event.seq
      const bytes = Buffer.from(encodeSse(event))
      for (const client of topic.clients) if (!client.catchingUp) deliver(client, event, bytes)
    }

    /** The live feed of a workflow: ends every client when it ends or fails. */
    const feed = (topic: Topic) =>
      bus.subscribe(topic.workflowId, topic.seen).pipe(
        Stream.takeUntil((e) => e.type === "done"),
        Stream.runForEach((event) => Effect.sync(() => broadcast(topic, event))),
        Effect.catchAll((e: StorageError) =>
          Effect.logWarning("event stream failed", { workflow_id: topic.workflowId, error: e.message })),
        Effect.ensuring(Effect.sync(() => {
          if (topics.get(topic.workflowId) === topic) topics.delete(topic.workflowId)
          for (const client of topic.clients) end(client)
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
          for (const event of events) deliver(client, event, Buffer.from(encodeSse(event)))
        }
      })

    const follow = (out: Sink, workflowId: string, start: FollowStart) => {
      const client: Client = { out, cursor: 0, catchingUp: false, ended: false }
      for (const event of start.first) write(client, Buffer.from(encodeSse(event)))
      if (Option.isNone(start.after) || closing) {
        end(client)
        return
      }
      client.cursor = start.after.value
      let topic = topics.get(workflowId)
      if (topic === undefined) {
        const created: Topic = { workflowId, clients: new Set(), seen: client.cursor, fiber: undefined }
        topics.set(workflowId, created)
        created.fiber = run(feed(created))
        topic = created
      }
      const joined = topic
      joined.clients.add(client)
      out.onClose(() => {
        client.ended = true
        detach(joined, client)
      })
      if (client.cursor < joined.seen) {
        client.catchingUp = true
        run(catchUp(joined, client).pipe(
          Effect.catchAll((e) =>
            Effect.zipRight(
              Effect.logWarning("event stream failed", { workflow_id: workflowId, error: e.message }),
              Effect.sync(() => end(client))
            ))
        ))
      }
    }

    const open = (workflowId: string, start: FollowStart) =>
      Effect.sync(() => {
        const out = new Readable({ read() {} })
        follow(readableSink(out), workflowId, start)
        return out
      })

    // One timer for every connection's keep-alive.
    const keepAlive = Effect.sync(() => {
      for (const topic of topics.values()) for (const client of topic.clients) if (!client.catchingUp) write(client, KEEP_ALIVE)
    }).pipe(Effect.repeat(Schedule.spaced(options.keepAlive)))
    yield* Effect.forkScoped(Effect.delay(keepAlive, options.keepAlive))

    // Shutdown (this layer closes before the listener does) ends every stream; a stream opened
    // after that gets its first events and ends.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closing = true
        const fibers: Array<Fiber.RuntimeFiber<void>> = []
        for (const topic of topics.values()) {
          for (const client of topic.clients) end(client)
          if (topic.fiber !== undefined) fibers.push(topic.fiber)
        }
        topics.clear()
        return Fiber.interruptAll(fibers)
      }))

    return SseHub.of({
      open,
      attach: (res, workflowId, start) => follow(responseSink(res), workflowId, start),
      stats: Effect.sync(() => {
        let clients = 0
        for (const topic of topics.values()) clients += topic.clients.size
        return { clients, workflows: topics.size }
      })
    })
  })
