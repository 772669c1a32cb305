/**
 * Reaching a runner's ComfyUI through its agent (issue 34): every connection the gateway would open
 * to ComfyUI is instead an HTTP/2 `CONNECT` stream (`:authority` COMFYUI_AUTHORITY) on the
 * session WES holds over the agent's WebSocket (AgentProtocol.ts); the agent pipes it to its own
 * ComfyUI. undici and `ws` take such a stream as their socket, so ComfyUI's HTTP and WebSocket
 * are spoken over it exactly as to a direct runner.
 *
 * Agent targets are addressed at a synthetic endpoint, `http://<runner-id>.agent.invalid`, so the
 * connector knows the runner from the host name alone (`.invalid` never resolves, should anything
 * else ever see it). Who holds the sessions is the caller's (`AgentSessions`, http-node's hub).
 */
import type { ClientHttp2Session, ClientHttp2Stream } from "node:http2"
import * as http2 from "node:http2"
import * as net from "node:net"
import type { RunnerTarget } from "@wes/core"
import { Agent, type buildConnector } from "undici"
import { COMFYUI_AUTHORITY } from "./AgentProtocol.js"

/** Where the agents' sessions are: the live HTTP/2 session of a runner's agent on this instance. */
export interface AgentSessions {
  readonly session: (runnerId: string) => ClientHttp2Session | undefined
}

const SUFFIX = ".agent.invalid"

/** The message of a call to an agent runner whose agent is connected elsewhere, or nowhere. */
export const AGENT_NOT_CONNECTED = "the runner's agent is not connected to this instance"

/** A connection to an agent runner that could not be opened; its message says why. */
export class AgentTunnelFailed extends Error {
  readonly code = "WES_AGENT_TUNNEL"
  override readonly name = "AgentTunnelFailed"
}

/** The synthetic endpoint of an agent runner. */
export const agentEndpoint = (runnerId: string): string => `http://${runnerId.toLowerCase()}${SUFFIX}`

/** The runner id of a synthetic host name, or undefined for any other host. */
export const agentRunnerOf = (hostname: string): string | undefined =>
  hostname.toLowerCase().endsWith(SUFFIX) ? hostname.slice(0, -SUFFIX.length).toLowerCase() : undefined

/** `runner` addressed at its synthetic endpoint (its own endpoint is never connected to). */
export const agentTarget = (runner: RunnerTarget): RunnerTarget => ({ ...runner, endpoint: agentEndpoint(runner.id) })

/**
 * Opens a `CONNECT` stream to `runnerId`'s ComfyUI: returned at once (writes wait in the stream);
 * `ready` is called once the agent answered 2xx (its ComfyUI accepted the connection), or with
 * the error otherwise, and the stream is then destroyed with it.
 */
export const openTunnel = (
  sessions: AgentSessions,
  runnerId: string,
  ready: (error: Error | undefined) => void = () => {}
): ClientHttp2Stream | AgentTunnelFailed => {
  const session = sessions.session(runnerId)
  if (session === undefined || session.closed || session.destroyed) return new AgentTunnelFailed(AGENT_NOT_CONNECTED)
  let stream: ClientHttp2Stream
  try {
    stream = session.request({ [http2.constants.HTTP2_HEADER_METHOD]: "CONNECT", [http2.constants.HTTP2_HEADER_AUTHORITY]: COMFYUI_AUTHORITY })
  } catch (e) {
    return new AgentTunnelFailed(`the runner's agent connection is closing (${e instanceof Error ? e.message : String(e)})`)
  }
  let settled = false
  const settle = (error: Error | undefined) => {
    if (settled) return
    settled = true
    stream.off("error", onError)
    ready(error)
  }
  const onError = (e: Error) => settle(new AgentTunnelFailed(`the runner's agent connection failed: ${e.message}`))
  stream.once("error", onError)
  stream.once("close", () => settle(new AgentTunnelFailed("the runner's agent closed the connection to ComfyUI before it opened")))
  stream.once("response", (headers) => {
    const status = Number(headers[http2.constants.HTTP2_HEADER_STATUS])
    if (status >= 200 && status < 300) return settle(undefined)
    const failed = new AgentTunnelFailed(`the runner's agent could not reach ComfyUI (HTTP ${status})`)
    settle(failed)
    stream.destroy(failed)
  })
  return stream
}

/** undici's connector over the agents' sessions: the socket is the CONNECT stream, once answered. */
export const tunnelConnector = (sessions: AgentSessions, timeoutMs: number): buildConnector.connector => (opts, callback) => {
  const runnerId = agentRunnerOf(opts.hostname)
  if (runnerId === undefined) return callback(new AgentTunnelFailed(`not an agent runner's address: ${opts.hostname}`), null)
  let timer: NodeJS.Timeout | undefined
  const stream = openTunnel(sessions, runnerId, (error) => {
    clearTimeout(timer)
    if (error === undefined) return callback(null, stream as unknown as net.Socket)
    // The stream is undici's no more: its end is nobody's error.
    if (!(stream instanceof AgentTunnelFailed)) stream.on("error", () => {})
    callback(error, null)
  })
  if (stream instanceof AgentTunnelFailed) return callback(stream, null)
  if (timeoutMs > 0) {
    timer = setTimeout(() => stream.destroy(new AgentTunnelFailed(`the runner's agent did not open a connection to ComfyUI within ${timeoutMs} ms`)), timeoutMs)
    timer.unref()
  }
}

/** An undici `Agent` whose every connection is a tunnel through the runner's agent. */
export const tunnelAgent = (sessions: AgentSessions, timeoutMs: number, options: Agent.Options = {}): Agent =>
  new Agent({ ...options, connect: tunnelConnector(sessions, timeoutMs) })

/**
 * `ws`'s `createConnection` for an agent runner's WebSocket: the CONNECT stream itself (node's
 * HTTP client writes the upgrade into it; the agent holds it until ComfyUI accepted). A missing
 * session or a refused tunnel ends the socket with the reason.
 */
export const tunnelSocket = (sessions: AgentSessions) => (options: { readonly host?: string | null | undefined }): net.Socket => {
  const runnerId = agentRunnerOf(options.host ?? "") ?? ""
  const stream = openTunnel(sessions, runnerId)
  if (!(stream instanceof AgentTunnelFailed)) return stream as unknown as net.Socket
  // An already-failed socket: ws reports its error as the connection's.
  const socket = new net.Socket()
  process.nextTick(() => socket.destroy(stream))
  return socket
}
