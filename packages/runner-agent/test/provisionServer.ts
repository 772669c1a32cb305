/**
 * A local HTTP server of model files for the provisioning tests: serves `Range: bytes=N-` with
 * 206, can cut a file's first answer after some bytes (the socket destroyed mid-body), redirect,
 * or answer a status; records every request (path, Range) and counts the body bytes it sent.
 */
import { createHash, randomBytes } from "node:crypto"
import * as http from "node:http"
import type { AddressInfo } from "node:net"

export interface ServedRequest {
  readonly path: string
  readonly range: string | undefined
}

export interface ModelServer {
  readonly url: (path: string) => string
  readonly port: number
  readonly requests: Array<ServedRequest>
  /** Body bytes written, all requests together. */
  readonly sent: () => number
  /** Serves `body` at `path`. */
  readonly file: (path: string, body: Buffer) => void
  /** The next answer for `path` stops after `bytes` body bytes (the connection is destroyed); then it answers `thenStatus` if given. */
  readonly cutOnce: (path: string, bytes: number, thenStatus?: number) => void
  /** The next answer for `path` sends `bytes` body bytes, then nothing more (the connection stays open). */
  readonly stallOnce: (path: string, bytes: number) => void
  readonly redirect: (path: string, location: string) => void
  /** `path` answers `code` (undefined: serves it again). */
  readonly status: (path: string, code: number | undefined) => void
  readonly close: () => Promise<void>
}

export const randomModel = (bytes: number) => {
  const body = randomBytes(bytes)
  return { body, sha256: createHash("sha256").update(body).digest("hex") }
}

export const sha256Of = (body: Buffer) => createHash("sha256").update(body).digest("hex")

export const startModelServer = async (): Promise<ModelServer> => {
  const files = new Map<string, Buffer>()
  const cuts = new Map<string, { readonly bytes: number; readonly then: number | undefined }>()
  const stalls = new Map<string, number>()
  const redirects = new Map<string, string>()
  const statuses = new Map<string, number>()
  const requests: Array<ServedRequest> = []
  let sent = 0
  const server = http.createServer((req, res) => {
    const path = req.url ?? "/"
    requests.push({ path, range: req.headers.range })
    const location = redirects.get(path)
    if (location !== undefined) return res.writeHead(302, { location }).end()
    const code = statuses.get(path)
    if (code !== undefined) return res.writeHead(code).end("no")
    const body = files.get(path)
    if (body === undefined) return res.writeHead(404).end("not found")
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? "")
    const start = range === null ? 0 : Number(range[1])
    if (start >= body.length && range !== null) return res.writeHead(416, { "content-range": `bytes */${body.length}` }).end()
    const part = body.subarray(start)
    res.writeHead(range === null ? 200 : 206, {
      "content-length": String(part.length),
      ...(range === null ? {} : { "content-range": `bytes ${start}-${body.length - 1}/${body.length}` })
    })
    const cut = cuts.get(path)
    if (cut !== undefined) {
      cuts.delete(path)
      if (cut.then !== undefined) statuses.set(path, cut.then)
      sent += cut.bytes
      return res.write(part.subarray(0, cut.bytes), () => res.socket?.destroy())
    }
    const stall = stalls.get(path)
    if (stall !== undefined) {
      stalls.delete(path)
      sent += stall
      return res.write(part.subarray(0, stall))
    }
    sent += part.length
    res.end(part)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    port,
    requests,
    sent: () => sent,
    file: (path, body) => files.set(path, body),
    cutOnce: (path, bytes, then) => cuts.set(path, { bytes, then }),
    stallOnce: (path, bytes) => stalls.set(path, bytes),
    redirect: (path, location) => redirects.set(path, location),
    status: (path, code) => (code === undefined ? statuses.delete(path) : statuses.set(path, code)),
    close: () => new Promise((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}
