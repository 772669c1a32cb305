/**
 * A runner's WebSocket (`/ws?clientId=...`) as a queue of `RunnerEvent`s for a scope: reconnects
 * with capped, jittered exponential backoff, and only once the previous socket is really closed
 * (ComfyUI unregisters a new socket that reuses the id of a half-open one); a ping heartbeat
 * detects silent dead sockets; `Connected` follows every (re)connect and `Disconnected` every loss
 * or failed attempt.
 *
 * It uses the `ws` package directly: the standard WebSocket API behind `Socket.WebSocketConstructor`
 * can neither set headers on the upgrade (proxy auth) nor send pings.
 */
import type { RunnerEvent, RunnerTarget } from "@wes/core"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Random from "effect/Random"
import type * as Scope from "effect/Scope"
import { WebSocket } from "ws"
import { type AgentSessions, tunnelSocket } from "./AgentTunnel.js"
import { type AddressGuard, guardedSocket } from "./GuardedConnect.js"
import { baseUrl } from "./RunnerHttp.js"
import { Outbox } from "./Outbox.js"
import { attributeImages, decodeBinaryFrame, decodeFrame, FEATURE_FLAGS_MESSAGE } from "./RunnerMessages.js"

/** Timing and buffering of the runner WebSocket. */
export interface RunnerConnectionOptions {
  /** Limit of the opening handshake (default 10 s). */
  readonly openTimeout?: Duration.Input
  /** Pause between heartbeats (default 15 s). */
  readonly heartbeatInterval?: Duration.Input
  /** A socket that answers a ping with neither a pong nor a message within this is dead (default 10 s). */
  readonly heartbeatTimeout?: Duration.Input
  /** First reconnect delay (default 500 ms); doubled per failed attempt, jittered down to half. */
  readonly reconnectInitialDelay?: Duration.Input
  /** Cap of the reconnect delay (default 30 s). */
  readonly reconnectMaxDelay?: Duration.Input
  /** How long a closing socket may take before it is torn down (default 5 s). */
  readonly closeTimeout?: Duration.Input
  /** Events buffered for a slow consumer (default 256); past it the producer waits. */
  readonly bufferSize?: number
  /** Frames received but not yet decoded (default 1024); overflowing it drops the connection, which then reconnects. */
  readonly inboxSize?: number
  /**
   * Largest frame taken (default 64 MiB): an image a node sends through the socket is one frame,
   * held whole. A bigger one closes the connection (1009), which then reconnects.
   */
  readonly maxFrameSize?: number
  /**
   * Bytes of image frames received and not yet taken by the consumer (default 256 MiB): a frame
   * that would exceed it drops the connection, like an inbox overflow.
   */
  readonly imageBytes?: number
  /** Connect only where this address policy allows (a user runner's socket); none: anywhere. */
  readonly guard?: AddressGuard | undefined
  /** An agent runner's socket goes through its agent's session (AgentTunnel.ts), never to an address. */
  readonly agents?: AgentSessions | undefined
}

interface Settings {
  readonly openTimeout: Duration.Duration
  readonly heartbeatInterval: Duration.Duration
  readonly heartbeatTimeout: Duration.Duration
  readonly initialDelay: Duration.Duration
  readonly maxDelay: Duration.Duration
  readonly closeTimeout: Duration.Duration
  readonly bufferSize: number
  readonly inboxSize: number
  readonly maxFrameSize: number
  readonly imageBytes: number
}

const settingsOf = (o: RunnerConnectionOptions): Settings => ({
  openTimeout: Duration.fromInputUnsafe(o.openTimeout ?? Duration.seconds(10)),
  heartbeatInterval: Duration.fromInputUnsafe(o.heartbeatInterval ?? Duration.seconds(15)),
  heartbeatTimeout: Duration.fromInputUnsafe(o.heartbeatTimeout ?? Duration.seconds(10)),
  initialDelay: Duration.fromInputUnsafe(o.reconnectInitialDelay ?? Duration.millis(500)),
  maxDelay: Duration.fromInputUnsafe(o.reconnectMaxDelay ?? Duration.seconds(30)),
  closeTimeout: Duration.fromInputUnsafe(o.closeTimeout ?? Duration.seconds(5)),
  bufferSize: Math.max(1, o.bufferSize ?? 256),
  inboxSize: Math.max(1, o.inboxSize ?? 1024),
  maxFrameSize: Math.max(1024, o.maxFrameSize ?? 64 * 1024 * 1024),
  imageBytes: Math.max(1024, o.imageBytes ?? 256 * 1024 * 1024)
})

/** `ws(s)://host[/prefix]/ws?clientId=<id>` for a runner endpoint. */
export const websocketUrl = (runner: RunnerTarget, clientId: string): string =>
  `${baseUrl(runner).replace(/^http/i, "ws")}/ws?clientId=${encodeURIComponent(clientId)}`

/** A `ws` message payload as one Buffer (`ws` delivers Buffers unless told otherwise). */
const toBuffer = (data: Buffer | ArrayBuffer | ReadonlyArray<Buffer>): Buffer =>
  Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer)

/**
 * One socket's life, bridged from `ws` callbacks: frames wait in a bounded inbox for the pump;
 * the first of close, error, heartbeat failure or overflow ends it. On open it announces the
 * client's feature flags (servers before 0.3.45 ignore the message).
 */
class Session {
  readonly inbox: Array<string | Buffer> = []
  readonly opened = Deferred.makeUnsafe<boolean>()
  readonly ended = Deferred.makeUnsafe<string>()
  reason: string | undefined
  /** Set by any frame or pong; cleared when a ping is sent. */
  alive = true
  private wake: (() => void) | undefined

  constructor(readonly ws: WebSocket, inboxSize: number, outbox: Outbox) {
    ws.on("open", () => {
      ws.send(FEATURE_FLAGS_MESSAGE)
      Deferred.doneUnsafe(this.opened, Exit.succeed(true))
    })
    ws.on("message", (data, isBinary) => {
      this.alive = true
      if (this.reason !== undefined) return
      const frame = isBinary ? toBuffer(data) : String(data)
      // Binary frames (images) are bounded in bytes too, until the consumer takes them (Outbox.ts).
      if (this.inbox.length >= inboxSize || (typeof frame !== "string" && !outbox.receive(frame.length))) {
        this.end("event buffer overflow: the consumer is too slow", true)
        return
      }
      this.inbox.push(frame)
      this.notify()
    })
    ws.on("pong", () => {
      this.alive = true
    })
    // Always listened to: `ws` throws on an unhandled "error" event.
    ws.on("error", (err) => this.end(err.message, false))
    ws.on("close", (code, reason) => {
      const why = reason.length > 0 ? `: ${reason.toString()}` : ""
      this.end(`closed (code ${code}${why})`, false)
    })
  }

  /** Ends the session once (the first reason wins), optionally tearing the socket down. */
  end(reason: string, terminate: boolean): void {
    if (this.reason === undefined) {
      this.reason = reason
      Deferred.doneUnsafe(this.opened, Exit.succeed(false))
      Deferred.doneUnsafe(this.ended, Exit.succeed(reason))
    }
    if (terminate) this.ws.terminate()
    this.notify()
  }

  private notify(): void {
    const w = this.wake
    this.wake = undefined
    w?.()
  }

  /** Waits for a frame or the end. */
  readonly more: Effect.Effect<void> = Effect.callback<void>((resume) => {
    if (this.inbox.length > 0 || this.reason !== undefined) return resume(Effect.void)
    this.wake = () => resume(Effect.void)
    return Effect.sync(() => {
      this.wake = undefined
    })
  })
}

/** Closes `ws` and waits until it is really closed (tearing it down if the close handshake stalls). */
const closeFully = (ws: WebSocket, timeout: Duration.Duration): Effect.Effect<void> => {
  const closed = Effect.callback<void>((resume) => {
    if (ws.readyState === WebSocket.CLOSED) return resume(Effect.void)
    const onClose = () => resume(Effect.void)
    ws.once("close", onClose)
    return Effect.sync(() => {
      ws.off("close", onClose)
    })
  })
  return Effect.sync(() => {
    if (ws.readyState === WebSocket.OPEN) ws.close(1000)
    else if (ws.readyState === WebSocket.CONNECTING) ws.terminate()
  }).pipe(
    Effect.andThen(closed.pipe(Effect.timeout(timeout))),
    Effect.catch(() => Effect.sync(() => ws.terminate()).pipe(Effect.andThen(closed.pipe(Effect.timeout(timeout))))),
    Effect.ignore
  )
}

/** Sends a ping every interval; a ping answered by nothing within the timeout ends the session. */
const heartbeat = (session: Session, s: Settings): Effect.Effect<void> =>
  Effect.gen(function*() {
    while (true) {
      yield* Effect.sleep(s.heartbeatInterval)
      session.alive = false
      yield* Effect.sync(() => {
        if (session.ws.readyState === WebSocket.OPEN) session.ws.ping()
      })
      yield* Effect.sleep(s.heartbeatTimeout)
      if (!session.alive) {
        session.end(`no pong or message within ${Duration.format(s.heartbeatTimeout)} of a ping`, true)
        return
      }
    }
  })

/** Frames decoded and offered together, at most. */
const PUMP_BATCH = 256

/** Decodes the inbox into `out` (waiting when `out` is full) until the session ended and the inbox is empty. */
const pump = (session: Session, out: Outbox, runner: RunnerTarget): Effect.Effect<void> =>
  Effect.gen(function*() {
    const attribute = attributeImages()
    while (true) {
      if (session.inbox.length === 0) {
        if (session.reason !== undefined) return
        yield* session.more
        continue
      }
      // What arrived meanwhile goes in one offer: the consumer takes it as one batch.
      const events: Array<RunnerEvent> = []
      let bytes = 0
      for (const frame of session.inbox.splice(0, PUMP_BATCH)) {
        if (typeof frame !== "string") bytes += frame.length
        const decoded = typeof frame === "string" ? decodeFrame(frame) : decodeBinaryFrame(frame)
        if (decoded._tag === "Event") events.push(attribute(decoded.event))
        else if (decoded._tag === "Malformed") {
          yield* Effect.logDebug(`runner ${runner.name}: ignoring a malformed WebSocket message (${decoded.reason})`)
          // The driver then reads the end of the runs in progress from the history.
          events.push({ _tag: "Unreadable", reason: decoded.reason })
        }
      }
      yield* out.offerAll(events, bytes)
    }
  })

/** One connection: open, announce, relay until it ends; the socket is closed when this returns. */
const connectOnce = (
  runner: RunnerTarget,
  url: string,
  out: Outbox,
  s: Settings,
  createConnection: typeof import("node:net").createConnection | undefined
): Effect.Effect<{ readonly opened: boolean; readonly reason: string }> =>
  Effect.scoped(Effect.gen(function*() {
    const session = yield* Effect.acquireRelease(
      Effect.sync(() =>
        new Session(
          new WebSocket(url, {
            headers: { ...runner.headers },
            handshakeTimeout: Duration.toMillis(s.openTimeout),
            perMessageDeflate: false,
            maxPayload: s.maxFrameSize,
            // The socket goes to the address the guard checked (GuardedConnect.ts), or through the agent.
            ...(createConnection === undefined ? {} : { createConnection })
          }),
          s.inboxSize,
          out
        )
      ),
      (session) => closeFully(session.ws, s.closeTimeout)
    )
    const opened = yield* Deferred.await(session.opened)
    if (!opened) return { opened: false, reason: session.reason ?? "not opened" }
    yield* out.offerAll([{ _tag: "Connected" }])
    const beat = yield* Effect.forkChild(heartbeat(session, s))
    const relay = yield* Effect.forkChild(pump(session, out, runner))
    const reason = yield* Deferred.await(session.ended)
    yield* Fiber.interrupt(beat)
    yield* Fiber.join(relay)
    return { opened: true, reason }
  }))

/** The delay before reconnect attempt `n` (0-based): doubling from the initial delay up to the cap, jittered to [d/2, d]. */
const backoff = (n: number, s: Settings): Effect.Effect<Duration.Duration> =>
  Effect.map(Random.nextBetween(0.5, 1), (jitter) => {
    const base = Math.min(Duration.toMillis(s.maxDelay), Duration.toMillis(s.initialDelay) * 2 ** Math.min(n, 30))
    return Duration.millis(Math.round(base * jitter))
  })

/** The runner's events, on a bounded queue, reconnecting until the scope closes. */
export const runnerEvents = (
  runner: RunnerTarget,
  clientId: string,
  options: RunnerConnectionOptions = {}
): Effect.Effect<Queue.Dequeue<RunnerEvent>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const s = settingsOf(options)
    const url = websocketUrl(runner, clientId)
    const createConnection = runner.connection === "agent" && options.agents !== undefined
      ? tunnelSocket(options.agents) as typeof import("node:net").createConnection
      : options.guard === undefined
      ? undefined
      : guardedSocket(options.guard, url.startsWith("wss:")) as typeof import("node:net").createConnection
    const queue = yield* Effect.acquireRelease(Queue.bounded<RunnerEvent>(s.bufferSize), Queue.shutdown)
    const out = new Outbox(queue, s.imageBytes)
    yield* Effect.forkScoped(Effect.gen(function*() {
      let attempt = 0
      while (true) {
        const result = yield* connectOnce(runner, url, out, s, createConnection)
        if (result.opened) {
          attempt = 0
          // A frame over `maxFrameSize` (ws: "Max payload size exceeded"): the run that sent it loses it.
          if (/max payload/i.test(result.reason)) {
            yield* Effect.logWarning(`runner ${runner.name}: a WebSocket frame exceeded ${s.maxFrameSize} bytes; the connection was dropped`)
          }
          yield* Effect.logDebug(`runner ${runner.name}: WebSocket lost: ${result.reason}`)
          yield* out.offerAll([{ _tag: "Disconnected", reason: result.reason }])
        } else {
          yield* Effect.logDebug(`runner ${runner.name}: WebSocket connect failed: ${result.reason}`)
          // Said too, so that whoever waits for the socket to open knows it did not.
          yield* out.offerAll([{ _tag: "Disconnected", reason: result.reason }])
        }
        yield* Effect.sleep(yield* backoff(attempt, s))
        attempt++
      }
    }))
    return queue
  })
