/**
 * What keeps an agent's connection going (AgentConnection.ts): the HTTP/2 session over its
 * WebSocket, the `/status` reads (stored, so every instance sees them, and this instance's
 * gauges), and the upkeep every third of the lease: a ping (a connection silent for a lease is
 * dead), the token checked again (revoked: CLOSE_TOKEN_REVOKED) and the presence renewed (taken
 * by another instance: CLOSE_REPLACED).
 */
import * as http2 from "node:http2"
import { type AgentIdentity, AgentStatus } from "@wes/core"
import type { AgentPresence, AgentTokens } from "@wes/core"
import { AGENT_STATUS_PATH, CLOSE_REPLACED, CLOSE_TOKEN_REVOKED } from "@wes/runner-client/agent-protocol"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import { createWebSocketStream, WebSocket } from "ws"
import { callJson } from "./AgentCalls.js"
import type { AgentHub, AgentLink } from "./AgentHub.js"
import { observeAgentStatus } from "./AgentMetrics.js"

/** HTTP/2 flow control for downloads through the tunnel: a stream may run 1 MiB ahead, the session 16 MiB. */
const STREAM_WINDOW = 1024 * 1024
const SESSION_WINDOW = 16 * 1024 * 1024

/** The HTTP/2 session over `ws`: WES is the client; the agent's headers are bounded. */
export const sessionOver = (ws: WebSocket): http2.ClientHttp2Session => {
  const stream = createWebSocketStream(ws)
  const session = http2.connect("http://agent", {
    createConnection: () => stream,
    settings: { initialWindowSize: STREAM_WINDOW, maxHeaderListSize: 64 * 1024, enablePush: false },
    maxSessionMemory: 64,
    maxHeaderListPairs: 256
  })
  session.once("connect", () => session.setLocalWindowSize(SESSION_WINDOW))
  // Its failures end the connection; the WebSocket's close says why.
  session.on("error", () => ws.terminate())
  stream.on("error", () => ws.terminate())
  session.once("close", () => ws.terminate())
  return session
}

/** One connection's upkeep, as AgentConnection.ts sets it up. */
export interface Upkeep {
  readonly ws: WebSocket
  readonly link: AgentLink
  readonly identity: AgentIdentity
  readonly instanceId: string
  readonly hub: AgentHub["Service"]
  readonly presence: AgentPresence["Service"]
  readonly tokens: AgentTokens["Service"]
  readonly log: Record<string, string>
}

const decodeStatus = Schema.decodeUnknownEffect(AgentStatus)

/** Reads `/status` every `statusMs`, for the store and this instance's gauges (AgentMetrics.ts). */
export const statusLoop = ({ hub, instanceId, link, log, presence }: Upkeep): Effect.Effect<void> => {
  const { callMs, maxAnswerBytes, statusMs } = hub.settings
  const runnerId = link.runnerId
  const read = callJson(link.session, { method: "GET", path: AGENT_STATUS_PATH }, { maxBytes: maxAnswerBytes, timeoutMs: callMs }).pipe(
    Effect.flatMap(decodeStatus),
    // This instance's gauges while the connection is still the runner's here.
    Effect.tap((status) => (hub.link(runnerId) === link ? observeAgentStatus(runnerId, status) : Effect.void)),
    Effect.flatMap((status) => presence.report(runnerId, instanceId, status)),
    Effect.catch((e) => Effect.logDebug("could not read an agent's status", { ...log, error: e.message }))
  )
  return Effect.asVoid(read.pipe(Effect.repeat(Schedule.spaced(Duration.millis(statusMs)))))
}

/** Every third of the lease: ping, token, presence; ends the connection when one says so. */
export const keepLoop = ({ hub, identity, instanceId, link, log, presence, tokens, ws }: Upkeep): Effect.Effect<never> => {
  const { leaseMs } = hub.settings
  let lastPong = Date.now()
  let answered = true
  ws.on("pong", () => {
    answered = true
  })
  const once = Effect.gen(function*() {
    if (answered) lastPong = Date.now()
    if (Date.now() - lastPong > leaseMs) {
      yield* Effect.logWarning("agent connection dead: no pong within the lease", log)
      return ws.terminate()
    }
    answered = false
    if (ws.readyState === WebSocket.OPEN) ws.ping()
    if (!(yield* tokens.isLive(identity.token_id))) {
      yield* Effect.logInfo("agent disconnected: its token was revoked", log)
      return link.close(CLOSE_TOKEN_REVOKED, "the runner token was revoked")
    }
    if (!(yield* presence.renew(link.runnerId, instanceId, leaseMs))) {
      yield* Effect.logInfo("agent disconnected: it connected to another instance", log)
      return link.close(CLOSE_REPLACED, "the runner's agent connected to another WES instance")
    }
  }).pipe(Effect.catch((e) => Effect.logWarning("could not check an agent's token or presence; retrying", { ...log, error: e.message })))
  return once.pipe(Effect.delay(Duration.millis(leaseMs / 3)), Effect.forever)
}
