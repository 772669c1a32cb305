/**
 * For tests of the address policy against DNS rebinding: one port on two loopback addresses, one
 * standing in for a public address (127.0.0.2, allowed by `standInDenied`) and the private one
 * (127.0.0.1 and ::1, where the system resolves `localhost`), each counting the requests and
 * WebSocket upgrades that reach it; and a resolver whose answers change from call to call.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { isPrivateAddress, type Resolver } from "../AddressPolicy.js"

/** The address that plays a public one in these tests. */
export const PUBLIC_STAND_IN = "127.0.0.2"

/** The policy of these tests: the usual one, but the stand-in counts as public. */
export const standInDenied = (address: string): boolean => address !== PUBLIC_STAND_IN && isPrivateAddress(address)

/** A resolver answering `answers` in turn (the last one from then on), counting its calls. */
export const rebindingResolver = (...answers: ReadonlyArray<ReadonlyArray<string>>): Resolver & { readonly calls: () => number } => {
  let calls = 0
  const resolve = (_host: string) => Promise.resolve(answers[Math.min(calls++, answers.length - 1)]!)
  return Object.assign(resolve, { calls: () => calls })
}

export type Handler = (req: IncomingMessage, res: ServerResponse) => void

export interface TwoAddressServer {
  readonly port: number
  /** Requests (and upgrades) that reached the stand-in for a public address. */
  readonly publicHits: () => number
  /** Requests (and upgrades) that reached the private address: must stay 0. */
  readonly privateHits: () => number
  readonly close: () => Promise<void>
}

const listen = (server: Server, host: string, port: number) =>
  new Promise<number>((resolve, reject) => {
    server.once("error", reject)
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port))
  })

/** `handler` on 127.0.0.2:port (public) and 127.0.0.1:port, [::1]:port (private), every answer closing its connection. */
export const twoAddressServer = async (handler: Handler): Promise<TwoAddressServer> => {
  const hits = { public: 0, private: 0 }
  const make = (side: "public" | "private") => {
    const server = createServer((req, res) => {
      hits[side]++
      res.setHeader("connection", "close")
      handler(req, res)
    })
    server.on("upgrade", (_req, socket) => {
      hits[side]++
      socket.destroy()
    })
    return server
  }
  const inside = make("private")
  const port = await listen(inside, "127.0.0.1", 0)
  const outside = make("public")
  await listen(outside, PUBLIC_STAND_IN, port)
  const inside6 = make("private")
  // ::1 may be missing (IPv6 off): then nothing can reach it anyway.
  const servers = [inside, outside, ...(await listen(inside6, "::1", port).then(() => [inside6], () => []))]
  return {
    port,
    publicHits: () => hits.public,
    privateHits: () => hits.private,
    close: () =>
      Promise.all(servers.map((s) => new Promise<void>((resolve) => {
        s.closeAllConnections()
        s.close(() => resolve())
      }))).then(() => undefined)
  }
}
