/**
 * The HTTP/2 server inside the agent's WebSocket (roles reversed: WES is the client). Each open
 * connection's byte stream (`createWebSocketStream`) is handed to one `http2.Server` as a
 * connection (Node wraps a non-socket Duplex in its JS stream socket); its streams are the
 * protocol's: `CONNECT comfyui:80` tunnels (`Tunnel.ts`) and the agent's routes (`Routes.ts`).
 * When the WebSocket closes, its HTTP/2 session and every tunnel in it close with it.
 */
import * as http2 from "node:http2"
import type { Duplex } from "node:stream"
import { createWebSocketStream, type WebSocket } from "ws"
import { type AgentLog, describe } from "./Log.js"
import { type Routes, serveRoute } from "./Routes.js"
import { tunnel } from "./Tunnel.js"

/**
 * Flow-control windows the agent advertises (what WES may send before the agent reads): large
 * enough that an upload is not held to 64 KiB per round trip over a distant link, bounded so a
 * stalled ComfyUI holds at most this much per stream and per connection.
 */
export const STREAM_WINDOW_BYTES = 1024 * 1024
export const CONNECTION_WINDOW_BYTES = 8 * 1024 * 1024

export interface AgentServer {
  /** Serves HTTP/2 over an open WebSocket until it closes. */
  readonly serve: (ws: WebSocket) => void
  /** Closes every connection being served. */
  readonly close: () => void
}

export const makeAgentServer = (comfyui: URL, routes: Routes, log: AgentLog): AgentServer => {
  const server = http2.createServer({
    settings: { initialWindowSize: STREAM_WINDOW_BYTES, maxConcurrentStreams: 1000, enablePush: false },
    maxSessionMemory: 64
  })
  server.on("session", (session) => session.setLocalWindowSize(CONNECTION_WINDOW_BYTES))
  server.on("sessionError", (e) => log("warn", `the HTTP/2 session with WES failed: ${describe(e)}`))
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => {
    // A stream's error (a reset by WES, the session gone) ends that stream only.
    stream.on("error", () => undefined)
    if (headers[":method"] === "CONNECT") return tunnel(stream, headers[":authority"], comfyui, log)
    serveRoute(routes, stream, headers, log).catch((e: unknown) => {
      log("error", `the agent failed to answer ${headers[":method"]} ${headers[":path"]}: ${describe(e)}`)
      if (!stream.destroyed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR)
    })
  })

  // Each connection ends by destroying its byte stream, never its session: Node's JS stream
  // socket asserts (a crash) when a session is destroyed while a write to the stream is pending.
  // The session closes when its stream does.
  const duplexes = new Set<Duplex>()
  return {
    serve: (ws) => {
      const duplex = createWebSocketStream(ws)
      duplex.on("error", () => undefined)
      duplexes.add(duplex)
      ws.once("close", () => {
        duplexes.delete(duplex)
        duplex.destroy()
      })
      server.emit("connection", duplex)
    },
    close: () => {
      for (const duplex of duplexes) duplex.destroy()
    }
  }
}
