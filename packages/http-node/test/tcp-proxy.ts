/**
 * A TCP proxy for tests that must lose the database without touching the shared PostgreSQL
 * server: `cut` destroys every proxied connection and then refuses (accept and reset) or
 * blackholes (accept and never answer) new ones, or, in `silence` mode, keeps every connection
 * open but carries nothing more either way (a network partition: no reset, no answer) and
 * blackholes new ones; `restore` forwards again, including what the held connections sent
 * meanwhile (like a partition that heals).
 */
import * as net from "node:net"

export type CutMode = "refuse" | "blackhole" | "silence"

export class TcpProxy {
  private mode: "open" | CutMode = "open"
  private readonly sockets = new Set<net.Socket>()
  private readonly held = new Set<net.Socket>()
  /** Forwarded pairs (client, upstream), to silence and resume (none is forwarded while silenced). */
  private readonly pairs = new Set<readonly [net.Socket, net.Socket]>()
  /** Connections accepted so far (forwarded or not). */
  accepted = 0

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    private readonly target: { readonly host: string; readonly port: number }
  ) {}

  static async start(target: { readonly host: string; readonly port: number }): Promise<TcpProxy> {
    const server = net.createServer()
    const port = await new Promise<number>((resolve, reject) => {
      server.once("error", reject)
      server.listen(0, "127.0.0.1", () => resolve((server.address() as net.AddressInfo).port))
    })
    const proxy = new TcpProxy(server, port, target)
    server.on("connection", (client) => proxy.accept(client))
    return proxy
  }

  private track(socket: net.Socket): void {
    this.sockets.add(socket)
    socket.on("close", () => this.sockets.delete(socket))
    // Errors end in "close"; nothing else to do with them here.
    socket.on("error", () => undefined)
  }

  private accept(client: net.Socket): void {
    this.accepted++
    this.track(client)
    if (this.mode === "refuse") client.resetAndDestroy()
    else if (this.mode === "blackhole" || this.mode === "silence") {
      // Held open, nothing read, nothing answered: the client's bytes wait in the socket.
      this.held.add(client)
      client.on("close", () => this.held.delete(client))
    } else this.forward(client)
  }

  private forward(client: net.Socket): void {
    const upstream = net.connect(this.target.port, this.target.host)
    this.track(upstream)
    client.pipe(upstream)
    upstream.pipe(client)
    const pair = [client, upstream] as const
    this.pairs.add(pair)
    const gone = () => {
      this.pairs.delete(pair)
      client.destroy()
      upstream.destroy()
    }
    client.on("close", gone)
    upstream.on("close", gone)
  }

  /**
   * `refuse`, `blackhole`: drops every connection, then refuses (reset) or blackholes new ones
   * until `restore`. `silence`: every connection stays open and carries nothing more (what is
   * sent waits in the proxy), and new ones are blackholed.
   */
  cut(mode: CutMode): void {
    this.mode = mode
    if (mode === "silence") {
      for (const [client, upstream] of this.pairs) {
        client.unpipe(upstream)
        upstream.unpipe(client)
        client.pause()
        upstream.pause()
      }
    } else {
      for (const s of this.sockets) s.destroy()
    }
  }

  /** Forwards again: new connections, and the held ones still open (with what they sent meanwhile). */
  restore(): void {
    if (this.mode === "silence") {
      for (const [client, upstream] of this.pairs) {
        client.pipe(upstream)
        upstream.pipe(client)
      }
    }
    this.mode = "open"
    for (const s of this.held) this.forward(s)
    this.held.clear()
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }
}
