/**
 * A stand-in for WES's side of the agent connection, for the agent's tests: an HTTP server that
 * accepts the agent's WebSocket at `AGENT_CONNECT_PATH` (checking its bearer token and
 * subprotocol, or refusing it with 401), and speaks HTTP/2 as the client over it, as WES does.
 */
import * as fs from "node:fs/promises"
import * as http from "node:http"
import * as http2 from "node:http2"
import type * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import type { Duplex } from "node:stream"
import {
  AGENT_CONNECT_PATH,
  AGENT_SUBPROTOCOL,
  COMFYUI_AUTHORITY
} from "@wes/runner-client/agent-protocol"
import { type AgentHandle, type AgentOptions, resolveFolders, startAgent } from "@wes/runner-agent"
import type { AgentFolders, AgentRuntimeOptions } from "@wes/runner-agent"
import { afterEach } from "vitest"
import { createWebSocketStream, type WebSocket, WebSocketServer } from "ws"

export const TOKEN = "wes_rt_test-token-0123456789"

/** Polls `condition` until it holds (every 5 ms, up to `timeoutMs`). */
export const waitFor = async (condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> => {
  const start = Date.now()
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 5))
  }
}

export interface AgentConnection {
  readonly ws: WebSocket
  readonly session: http2.ClientHttp2Session
  /** The byte stream under the session: destroyed to end it (destroying the session while a write
   * is pending trips an assertion in Node's JS stream socket). */
  readonly duplex: Duplex
  /** The first chunks of bytes the agent sent after the upgrade (its first WebSocket frames). */
  readonly raw: Array<Buffer>
}

export interface TestWes {
  readonly url: URL
  /** Every connection the agent opened, in order. */
  readonly connections: Array<AgentConnection>
  /** Upgrade attempts answered 401 so far. */
  readonly refused: () => number
  /** Answer the next `n` upgrades with 401. */
  refuseNext(n: number): void
  /** Whether to answer pings (false: a WES that went silent). */
  answerPings: boolean
  /** The latest open connection (waits for one). */
  readonly connection: () => Promise<AgentConnection>
  readonly close: () => Promise<void>
}

const cleanups: Array<() => Promise<void>> = []
afterEach(async () => {
  for (const f of cleanups.splice(0).reverse()) await f()
})

export const startWes = async (): Promise<TestWes> => {
  const sockets = new Set<net.Socket>()
  const wss = new WebSocketServer({ noServer: true, autoPong: false })
  let refuse = 0
  let refused = 0
  const server = http.createServer((_req, res) => res.writeHead(404).end())
  server.on("connection", (s) => {
    sockets.add(s)
    s.once("close", () => sockets.delete(s))
  })
  const wes: TestWes = {
    url: new URL("http://127.0.0.1"),
    connections: [],
    refused: () => refused,
    refuseNext: (n) => void (refuse = n),
    answerPings: true,
    connection: async () => {
      await waitFor(() => wes.connections.at(-1)?.ws.readyState === 1, "the agent to connect")
      return wes.connections.at(-1)!
    },
    close: async () => {
      for (const c of wes.connections) c.duplex.destroy()
      for (const s of sockets) s.destroy()
      wss.close()
      await new Promise((r) => server.close(r))
    }
  }
  server.on("upgrade", (req, socket, head) => {
    const ok = req.url === AGENT_CONNECT_PATH && req.headers.authorization === `Bearer ${TOKEN}` && refuse === 0
    if (!ok || req.headers["sec-websocket-protocol"] !== AGENT_SUBPROTOCOL) {
      if (refuse > 0) refuse--
      refused++
      socket.end("HTTP/1.1 401 Unauthorized\r\nconnection: close\r\ncontent-length: 0\r\n\r\n")
      return
    }
    const raw: Array<Buffer> = []
    const record = (chunk: Buffer) => {
      raw.push(chunk)
      if (raw.length >= 4) socket.off("data", record)
    }
    socket.on("data", record)
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on("ping", (data) => {
        if (wes.answerPings) ws.pong(data)
      })
      const duplex = createWebSocketStream(ws)
      duplex.on("error", () => undefined)
      const session = http2.connect("http://agent", { createConnection: () => duplex })
      session.on("error", () => undefined)
      wes.connections.push({ ws, session, duplex, raw })
    })
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  const address = server.address() as net.AddressInfo
  ;(wes as { url: URL }).url = new URL(`http://127.0.0.1:${address.port}`)
  cleanups.push(() => wes.close())
  return wes
}

export interface Logged {
  readonly lines: Array<string>
}

/** Starts an agent against `wes` and ComfyUI at `comfyui`; closed after the test. */
export const runAgent = async (
  wes: TestWes,
  comfyui: string,
  extra: Partial<AgentOptions> & AgentRuntimeOptions & { readonly folders?: AgentFolders } = {}
): Promise<AgentHandle & Logged> => {
  const lines: Array<string> = []
  const agent = await startAgent({
    comfyui: new URL(comfyui),
    server: wes.url,
    token: TOKEN,
    folders: resolveFolders({}),
    modelBudgetBytes: null,
    cleanup: true,
    allowPrivateModelUrls: false,
    backoff: { initialMs: 10, maxMs: 100, stableMs: 60_000 },
    log: (level, message) => void lines.push(`${level} ${message}`),
    ...extra
  })
  cleanups.push(() => agent.close())
  return { ...agent, lines }
}

/** A fresh temporary directory, removed after the test. */
export const tempDir = async (): Promise<string> => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "wes-agent-test-"))
  cleanups.push(() => fs.rm(dir, { recursive: true, force: true }))
  return dir
}

export interface Answer {
  readonly status: number
  readonly body: string
}

/** One request to the agent's own routes. */
export const request = (session: http2.ClientHttp2Session, method: string, path: string, body?: string): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const stream = session.request({ ":method": method, ":path": path, ...(body !== undefined ? { "content-type": "application/json" } : {}) })
    let status = 0
    let text = ""
    stream.on("response", (h) => (status = Number(h[":status"])))
    stream.setEncoding("utf8")
    stream.on("data", (d: string) => (text += d))
    stream.on("end", () => resolve({ status, body: text }))
    stream.on("error", reject)
    stream.end(body)
  })

/** A CONNECT stream to `authority`, resolved with its answer status. */
export const connect = (session: http2.ClientHttp2Session, authority = COMFYUI_AUTHORITY) =>
  new Promise<{ readonly status: number; readonly stream: http2.ClientHttp2Stream }>((resolve, reject) => {
    const stream = session.request({ ":method": "CONNECT", ":authority": authority })
    stream.on("response", (h) => resolve({ status: Number(h[":status"]), stream }))
    stream.on("error", reject)
  })

/** A plain HTTP/1.1 GET spoken over a CONNECT tunnel, as WES speaks to ComfyUI. */
export const getThroughTunnel = async (session: http2.ClientHttp2Session, path: string): Promise<Answer> => {
  const { status, stream } = await connect(session)
  if (status !== 200) throw new Error(`CONNECT answered ${status}`)
  return new Promise((resolve, reject) => {
    const req = http.get({ path, headers: { host: "127.0.0.1" }, createConnection: () => stream as unknown as net.Socket }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (d: string) => (text += d))
      res.on("end", () => {
        stream.close()
        resolve({ status: res.statusCode ?? 0, body: text })
      })
    })
    req.on("error", reject)
  })
}
