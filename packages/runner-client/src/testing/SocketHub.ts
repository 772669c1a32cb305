/**
 * The fake's WebSocket sessions, with ComfyUI's semantics (server.py `websocket_handler`,
 * `send_json`, `send_bytes`): one socket per sid, a reconnect with the same clientId replaces the
 * entry without closing the old socket, and the old socket's exit removes whatever is registered
 * under the sid. Messages to a sid that is not connected are dropped.
 */
import type { IncomingHttpHeaders } from "node:http"
import { WebSocket } from "ws"

/** A WebSocket connection the fake accepted. */
export interface ConnectionRecord {
  readonly client_id: string
  readonly headers: IncomingHttpHeaders
  readonly at: number
}

export class SocketHub {
  private readonly bySid = new Map<string, WebSocket>()
  private readonly flags = new Map<string, Record<string, unknown>>()
  private readonly open = new Set<WebSocket>()
  private readonly silenced = new Set<WebSocket>()

  /** Registers a new socket under `sid`, replacing (not closing) any previous one. */
  attach(ws: WebSocket, sid: string): void {
    this.bySid.delete(sid)
    this.bySid.set(sid, ws)
    this.flags.set(sid, {})
    this.open.add(ws)
    ws.on("ping", (data) => {
      if (!this.silenced.has(ws) && ws.readyState === WebSocket.OPEN) ws.pong(data)
    })
    ws.on("close", () => {
      // ComfyUI's `finally: self.sockets.pop(sid)`: this also unregisters a newer socket of the same sid.
      this.bySid.delete(sid)
      this.flags.delete(sid)
      this.open.delete(ws)
      this.silenced.delete(ws)
    })
  }

  setFlags(sid: string, flags: Record<string, unknown>): void {
    if (this.flags.has(sid)) this.flags.set(sid, flags)
  }

  /** Whether the client `sid` negotiated `supports_preview_metadata` (feature_flags). */
  supportsPreviewMetadata(sid: string | undefined): boolean {
    return sid !== undefined && this.flags.get(sid)?.supports_preview_metadata === true
  }

  private deliver(ws: WebSocket, payload: string | Buffer): void {
    if (ws.readyState !== WebSocket.OPEN || this.silenced.has(ws)) return
    ws.send(payload, { binary: typeof payload !== "string" })
  }

  /** Sees every JSON message as it is sent (benchmarks time event delivery with it). */
  observer: ((type: string, data: unknown) => void) | undefined

  /** `send_json`: to `sid` if given (dropped when not connected), else to every registered socket. */
  sendJson(type: string, data: unknown, sid?: string): void {
    this.observer?.(type, data)
    const payload = JSON.stringify({ type, data })
    if (sid === undefined) for (const ws of [...this.bySid.values()]) this.deliver(ws, payload)
    else {
      const ws = this.bySid.get(sid)
      if (ws !== undefined) this.deliver(ws, payload)
    }
  }

  /** `send_bytes`: a binary frame (`uint32 BE type` + payload). */
  sendBinary(eventType: number, payload: Buffer, sid?: string): void {
    const head = Buffer.alloc(4)
    head.writeUInt32BE(eventType, 0)
    const frame = Buffer.concat([head, payload])
    if (sid === undefined) for (const ws of [...this.bySid.values()]) this.deliver(ws, frame)
    else {
      const ws = this.bySid.get(sid)
      if (ws !== undefined) this.deliver(ws, frame)
    }
  }

  /** Sends a raw text or binary frame to `sid` (or every registered socket). */
  sendRaw(payload: string | Buffer, sid?: string): void {
    const targets = sid === undefined ? [...this.bySid.values()] : [this.bySid.get(sid)].filter((w) => w !== undefined)
    for (const ws of targets) this.deliver(ws, payload)
  }

  /** Sids currently registered. */
  sids(): Array<string> {
    return [...this.bySid.keys()]
  }

  /** Closes every socket abruptly (no close frame), as a crash or a network cut would. */
  dropAll(): void {
    for (const ws of this.open) ws.terminate()
  }

  /** Keeps every currently open socket open but sends nothing on it any more (not even pongs). */
  silenceAll(): void {
    for (const ws of this.open) this.silenced.add(ws)
  }

  /** Ends the silence of the sockets `silenceAll` silenced. */
  unsilenceAll(): void {
    this.silenced.clear()
  }
}
