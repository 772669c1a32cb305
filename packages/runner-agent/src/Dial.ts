/**
 * The agent's one connection to WES: a WebSocket to `AGENT_CONNECT_PATH` with the runner token
 * as a bearer and subprotocol `AGENT_SUBPROTOCOL`, redialled for as long as the agent runs, one
 * at a time. Between attempts: jittered exponential backoff (`Backoff.ts`), reset by a connection
 * that stayed up; a refused or revoked token, or a replacement by another agent, waits the
 * longest delay and says so in the log, since it will not fix itself sooner; a WES shutting
 * the connection down (1001) is redialled at once, to reach another instance. A silent WES
 * (`Heartbeat.ts`) is dropped and redialled.
 */
import { AGENT_CONNECT_PATH, AGENT_SUBPROTOCOL } from "@wes/runner-client/agent-protocol"
import { WebSocket } from "ws"
import { type BackoffSettings, closing, DEFAULT_BACKOFF, nextDelay, type Wait } from "./Backoff.js"
import { heartbeat } from "./Heartbeat.js"
import { type AgentLog, describe } from "./Log.js"

export interface DialOptions {
  readonly server: URL
  readonly token: string
  readonly log: AgentLog
  readonly backoff?: BackoffSettings
  /** Ping interval; a ping not answered before the next is a dead connection (default 15 s). */
  readonly heartbeatMs?: number
  /** Serves one open connection; called once per connection. */
  readonly onOpen: (ws: WebSocket) => void
}

export interface Dialer {
  /** Whether a connection to WES is open now. */
  readonly connected: () => boolean
  /** Stops redialling and closes the connection (code 1001, "agent stopping"). */
  readonly close: () => Promise<void>
}

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"])

/** How an attempt ended, deciding the wait before the next. */
type Ended = { readonly wait: Wait }

export const connectUrl = (server: URL): string => {
  const url = new URL(AGENT_CONNECT_PATH.slice(1), server.href.endsWith("/") ? server : new URL(`${server.href}/`))
  url.protocol = server.protocol === "https:" ? "wss:" : "ws:"
  return url.href
}

export const dial = (options: DialOptions): Dialer => {
  const settings = options.backoff ?? DEFAULT_BACKOFF
  const heartbeatMs = options.heartbeatMs ?? 15_000
  const url = connectUrl(options.server)
  // A zero mask makes `ws` skip masking on both ends (a byte-by-byte XOR in JS without the native
  // addon: seconds of CPU per GiB each way). Masking protects proxies that read the bytes in the
  // clear; under TLS, or on loopback, no such proxy sees them.
  const unmasked = url.startsWith("wss:") || LOOPBACK.has(options.server.hostname)
  let stopped = false
  let current: WebSocket | undefined
  let timer: NodeJS.Timeout | undefined
  let attempt = 0
  let finished: () => void = () => undefined
  const done = new Promise<void>((resolve) => (finished = resolve))

  const attemptOnce = (): Promise<Ended> =>
    new Promise((resolve) => {
      const ws = new WebSocket(url, AGENT_SUBPROTOCOL, {
        headers: { authorization: `Bearer ${options.token}` },
        handshakeTimeout: 15_000,
        perMessageDeflate: false,
        ...(unmasked ? { generateMask: (mask: Buffer) => void mask.fill(0) } : {})
      })
      current = ws
      let ended: Ended = { wait: "backoff" }
      let openedAt: number | undefined
      let stopHeartbeat = () => undefined as void
      let reported = false
      ws.on("unexpected-response", (req, res) => {
        reported = true
        if (res.statusCode === 401) {
          options.log("error", `the runner token was refused by ${options.server.origin}: wrong or revoked (WES_RUNNER_TOKEN)`)
          ended = { wait: "max" }
        } else {
          options.log("warn", `WES answered ${res.statusCode} instead of accepting the agent's connection`)
        }
        res.resume()
        req.destroy()
        ws.terminate()
      })
      ws.on("error", (e) => {
        if (openedAt === undefined && !reported) options.log("warn", `cannot reach WES at ${url}: ${describe(e)}`)
      })
      ws.on("open", () => {
        openedAt = Date.now()
        options.log("info", `connected to WES at ${url}`)
        stopHeartbeat = heartbeat(ws, heartbeatMs, () => {
          options.log("warn", `WES did not answer a ping or send anything within ${heartbeatMs} ms; reconnecting`)
          ws.terminate()
        })
        options.onOpen(ws)
      })
      ws.on("close", (code, reason) => {
        stopHeartbeat()
        if (current === ws) current = undefined
        if (openedAt !== undefined) {
          const closed = closing(code, reason.toString(), Date.now() - openedAt >= settings.stableMs)
          options.log(closed.level, closed.message)
          ended = { wait: closed.wait }
        }
        resolve(ended)
      })
    })

  const loop = async (): Promise<void> => {
    while (!stopped) {
      const { wait } = await attemptOnce()
      if (stopped) break
      if (wait === "reset") attempt = 0
      const delay = wait === "max" ? settings.maxMs : nextDelay(settings, attempt++)
      await new Promise<void>((resolve) => {
        timer = setTimeout(resolve, delay)
        stopWaiting = resolve
      })
    }
    finished()
  }
  let stopWaiting: () => void = () => undefined
  void loop()

  return {
    connected: () => current?.readyState === WebSocket.OPEN,
    close: async () => {
      stopped = true
      clearTimeout(timer)
      stopWaiting()
      const ws = current
      if (ws !== undefined) {
        if (ws.readyState === WebSocket.OPEN) {
          ws.close(1001, "agent stopping")
          // A peer that does not answer the close handshake is not waited for long.
          setTimeout(() => ws.terminate(), 2_000).unref()
        } else ws.terminate()
      }
      await done
    }
  }
}
