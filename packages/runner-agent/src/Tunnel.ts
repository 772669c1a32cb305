/**
 * `CONNECT comfyui:80` from WES: a TCP connection to this agent's ComfyUI, piped both ways with
 * backpressure (`pipe` pauses the faster side; HTTP/2 flow control carries the pause to WES).
 * The address is the one the agent was started with; any other authority is refused with 403,
 * so a WES (or anyone holding the token) can never use the agent to reach another host. The two
 * ends close together: a reset on either side resets the other.
 */
import * as http2 from "node:http2"
import * as net from "node:net"
import { COMFYUI_AUTHORITY } from "@wes/runner-client/agent-protocol"
import { type AgentLog, describe } from "./Log.js"

const { NGHTTP2_CONNECT_ERROR } = http2.constants

/** `host` and `port` of ComfyUI's http:// URL (port 80 when it names none). */
export const comfyAddress = (comfyui: URL): { readonly host: string; readonly port: number } => ({
  host: comfyui.hostname.replace(/^\[(.*)\]$/, "$1"),
  port: comfyui.port !== "" ? Number(comfyui.port) : 80
})

export const tunnel = (
  stream: http2.ServerHttp2Stream,
  authority: string | undefined,
  comfyui: URL,
  log: AgentLog
): void => {
  if (authority !== COMFYUI_AUTHORITY) {
    log("warn", `refused a CONNECT to ${JSON.stringify(authority ?? "")}: the agent only connects to its ComfyUI`)
    stream.respond({ ":status": 403, "content-type": "text/plain" })
    stream.end(`the agent only connects to ${COMFYUI_AUTHORITY}\n`)
    return
  }
  const { host, port } = comfyAddress(comfyui)
  const socket = net.connect({ host, port, noDelay: true })
  let open = false
  socket.once("connect", () => {
    open = true
    if (stream.destroyed) return void socket.destroy()
    stream.respond({ ":status": 200 })
    stream.pipe(socket)
    socket.pipe(stream)
  })
  socket.on("error", (e) => {
    if (!open) {
      log("warn", `cannot reach ComfyUI at ${host}:${port}: ${describe(e)}`)
      if (!stream.destroyed && !stream.headersSent) {
        stream.respond({ ":status": 502, "content-type": "text/plain" })
        stream.end(`the agent cannot reach ComfyUI: ${describe(e)}\n`)
      }
    } else if (!stream.destroyed) stream.close(NGHTTP2_CONNECT_ERROR)
  })
  // ComfyUI closed the connection: `pipe` ended the stream; `close` resets it only once that end is
  // flushed (Node waits for 'finish' with NO_ERROR), so nothing ComfyUI sent is lost.
  socket.on("close", (hadError) => {
    if (!hadError && open && !stream.destroyed) stream.close()
  })
  stream.on("close", () => {
    if (!socket.destroyed) socket.destroy()
  })
  stream.on("aborted", () => socket.destroy())
  stream.on("error", () => socket.destroy())
}
