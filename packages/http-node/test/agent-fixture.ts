/**
 * A minimal `wes-agent` for the server-side tests of issue 34 (the real one is @wes/runner-agent):
 * it dials WES's agent endpoint with a runner token, and over the WebSocket's byte stream serves
 * HTTP/2 (AgentProtocol.ts): CONNECT goes to its ComfyUI (a fake), `/status` answers a fixed
 * status, `/provision` and `/cleanup` answer what the test scripts. It records what WES asked.
 */
import * as http2 from "node:http2"
import * as net from "node:net"
import type { AgentStatus } from "@wes/core"
import { AGENT_CONNECT_PATH, AGENT_SUBPROTOCOL, type ProvisionLine } from "@wes/runner-client/agent-protocol"
import { createWebSocketStream, WebSocket } from "ws"

export const testStatus: AgentStatus = {
  agent_version: "0.0.0-test",
  gpu: { name: "Test GPU", vram_total_bytes: 8 * 2 ** 30, vram_free_bytes: 6 * 2 ** 30 },
  disk: { free_bytes: 100 * 2 ** 30, total_bytes: 500 * 2 ** 30 },
  models: [],
  model_budget_bytes: null,
  cleanup: true
}

export interface TestAgentOptions {
  /** WES's base URL. */
  readonly server: string
  readonly token: string
  /** The ComfyUI the agent is beside (`http://host:port`). */
  readonly comfyui: string
  readonly status?: AgentStatus
  /** The NDJSON lines `/provision` answers. */
  readonly provision?: ReadonlyArray<ProvisionLine>
}

export interface TestAgent {
  readonly ws: WebSocket
  /** Resolves with the close code and reason WES sent (or the socket's end). */
  readonly closed: Promise<{ readonly code: number; readonly reason: string }>
  /** What WES asked of the agent itself (not the tunnels): method, path and JSON body. */
  readonly requests: Array<{ readonly method: string; readonly path: string; readonly body: unknown }>
  /** CONNECT streams opened (connections to ComfyUI). */
  readonly tunnels: () => number
  readonly close: () => Promise<void>
}

const readBody = async (stream: http2.ServerHttp2Stream): Promise<unknown> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk)
  const text = Buffer.concat(chunks).toString("utf8")
  return text === "" ? undefined : JSON.parse(text) as unknown
}

/** The agent's HTTP/2 server (not listening: give it connections). */
export const agentServer = (options: TestAgentOptions, requests: TestAgent["requests"], count: { tunnels: number }) => {
  const comfy = new URL(options.comfyui)
  const server = http2.createServer()
  server.on("stream", (stream: http2.ServerHttp2Stream, headers) => {
    const method = String(headers[":method"])
    if (method === "CONNECT") {
      count.tunnels++
      const socket = net.connect(Number(comfy.port), comfy.hostname)
      socket.once("connect", () => {
        stream.respond({ ":status": 200 })
        socket.pipe(stream).pipe(socket)
      })
      socket.once("error", () => (stream.headersSent ? stream.destroy() : stream.respond({ ":status": 502 }, { endStream: true })))
      stream.once("close", () => socket.destroy())
      stream.on("error", () => socket.destroy())
      return
    }
    const path = String(headers[":path"])
    void readBody(stream).then((body) => {
      requests.push({ method, path, body })
      if (path === "/status") {
        stream.respond({ ":status": 200, "content-type": "application/json" })
        return stream.end(JSON.stringify(options.status ?? testStatus))
      }
      if (path === "/provision") {
        stream.respond({ ":status": 200, "content-type": "application/x-ndjson" })
        return stream.end((options.provision ?? [{ type: "done" }]).map((l) => JSON.stringify(l) + "\n").join(""))
      }
      if (path === "/cleanup") {
        stream.respond({ ":status": 200, "content-type": "application/json" })
        return stream.end(JSON.stringify({ deleted: 1, skipped: 0 }))
      }
      stream.respond({ ":status": 404 }, { endStream: true })
    })
  })
  return server
}

/** Connects an agent; resolves once the WebSocket is open, rejects with the HTTP status WES refused it with. */
export const connectAgent = (options: TestAgentOptions): Promise<TestAgent> =>
  new Promise((resolve, reject) => {
    const url = `${options.server.replace(/^http/, "ws")}${AGENT_CONNECT_PATH}`
    const ws = new WebSocket(url, AGENT_SUBPROTOCOL, { headers: { authorization: `Bearer ${options.token}` } })
    const requests: TestAgent["requests"] = []
    const count = { tunnels: 0 }
    const closed = new Promise<{ code: number; reason: string }>((done) =>
      ws.once("close", (code, reason) => done({ code, reason: reason.toString() })))
    ws.once("unexpected-response", (_req, res) => {
      reject(new HandshakeRefused(res.statusCode ?? 0))
      ws.terminate()
    })
    ws.once("error", (e) => reject(e))
    ws.once("open", () => {
      agentServer(options, requests, count).emit("connection", createWebSocketStream(ws))
      resolve({
        ws,
        closed,
        requests,
        tunnels: () => count.tunnels,
        close: () => {
          ws.close(1000)
          return closed.then(() => undefined)
        }
      })
    })
  })

/** WES answered the handshake with `status` instead of upgrading. */
export class HandshakeRefused extends Error {
  constructor(readonly status: number) {
    super(`the agent endpoint answered HTTP ${status}`)
  }
}
