/**
 * The agent endpoint (issue 34): WebSocket upgrades at AGENT_CONNECT_PATH on the server's own
 * port, handled before the HTTP router sees them (which would answer them as routes). The runner
 * token (`Authorization: Bearer`) is verified BEFORE the upgrade: a missing, wrong or revoked one
 * gets a plain 401 and the socket is closed; a handshake without the AGENT_SUBPROTOCOL gets 400.
 * Each accepted agent is served (AgentConnection.ts) in a fiber of this layer's scope, so
 * shutting down closes every agent's connection (1001).
 */
import type { IncomingMessage, Server as NodeServer } from "node:http"
import type { Duplex } from "node:stream"
import { AgentTokens } from "@wes/core"
import { AGENT_CONNECT_PATH, AGENT_SUBPROTOCOL } from "@wes/runner-client/agent-protocol"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { WebSocketServer } from "ws"
import { type AgentConnectionDeps, serveAgent } from "./AgentConnection.js"
import { AgentHub } from "./AgentHub.js"

/** Answers a refused handshake with the contract's error body, then closes the socket. */
const refuse = (socket: Duplex, status: number, reason: string, message: string): void => {
  if (socket.destroyed) return
  const body = JSON.stringify({ status, message })
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Connection: close\r\n\r\n${body}`
  )
  setTimeout(() => socket.destroy(), 1_000).unref()
}

const bearer = (header: string | undefined): string | undefined => {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "")
  return match?.[1]
}

const offers = (req: IncomingMessage, protocol: string): boolean =>
  (req.headers["sec-websocket-protocol"] ?? "").split(",").some((p) => p.trim() === protocol)

const isAgentPath = (url: string | undefined): boolean => {
  if (url === undefined) return false
  const q = url.indexOf("?")
  return (q < 0 ? url : url.slice(0, q)) === AGENT_CONNECT_PATH
}

export class AgentEndpoint extends Context.Service<AgentEndpoint, {
  /** Takes the agent path's upgrades of `server` (others go on to the router). */
  readonly attach: (server: NodeServer) => void
}>()("@wes/http-node/AgentEndpoint") {
  static layer: Layer.Layer<AgentEndpoint, never, AgentConnectionDeps> = Layer.effect(AgentEndpoint, Effect.gen(function*() {
    const hub = yield* AgentHub
    const tokens = yield* AgentTokens
    const context = yield* Effect.context<AgentConnectionDeps>()
    const { maxMessageBytes, maxPendingHandshakes } = hub.settings
    const wss = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      maxPayload: maxMessageBytes,
      handleProtocols: (protocols) => (protocols.has(AGENT_SUBPROTOCOL) ? AGENT_SUBPROTOCOL : false)
    })
    const connections = yield* FiberSet.make<void, never>()
    const run = yield* FiberSet.runtime(connections)<AgentConnectionDeps>()
    let stopping = false
    let pending = 0
    yield* Effect.addFinalizer(() => Effect.sync(() => {
      stopping = true
      wss.close()
    }))

    const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
      // A client gone mid-handshake must not crash the process.
      socket.on("error", () => socket.destroy())
      if (stopping) return refuse(socket, 503, "Service Unavailable", "WES is shutting down; connect again later")
      const token = bearer(req.headers.authorization)
      if (token === undefined) return refuse(socket, 401, "Unauthorized", "a runner token is required (Authorization: Bearer <token>)")
      if (pending >= maxPendingHandshakes) return refuse(socket, 503, "Service Unavailable", "too many agents connecting at once; try again")
      pending++
      Effect.runPromiseWith(context)(Effect.exit(tokens.verify(token))).then((verified) => {
        pending--
        if (Exit.isFailure(verified)) return refuse(socket, 503, "Service Unavailable", "the runner token could not be checked; try again")
        if (Option.isNone(verified.value)) return refuse(socket, 401, "Unauthorized", "the runner token is wrong or revoked")
        if (!offers(req, AGENT_SUBPROTOCOL)) return refuse(socket, 400, "Bad Request", `the WebSocket subprotocol ${AGENT_SUBPROTOCOL} is required`)
        if (stopping || socket.destroyed) return socket.destroy()
        const identity = verified.value.value
        wss.handleUpgrade(req, socket, head, (ws) => {
          run(serveAgent(ws, identity))
        })
      }, (e: unknown) => {
        pending--
        socket.destroy(e instanceof Error ? e : new Error(String(e)))
      })
    }

    return AgentEndpoint.of({
      attach: (server) => {
        // The router's own upgrade listener would answer this path too: the agent path's
        // upgrades are taken before any listener sees them.
        const emit = server.emit.bind(server) as (event: string | symbol, ...args: Array<unknown>) => boolean
        server.emit = function(event: string | symbol, ...args: Array<unknown>): boolean {
          if (event === "upgrade" && isAgentPath((args[0] as IncomingMessage).url)) {
            upgrade(args[0] as IncomingMessage, args[1] as Duplex, args[2] as Buffer)
            return true
          }
          return emit(event, ...args)
        } as typeof server.emit
      }
    })
  }))
}
