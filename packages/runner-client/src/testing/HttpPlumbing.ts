/** Request plumbing of the fake: body limits, answers, and the checks a proxy or aiohttp adds. */
import type * as http from "node:http"
import type { Reply } from "./Routes.js"

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"])

const hostname = (hostHeader: string): string => {
  try {
    return new URL(`http://${hostHeader}`).hostname
  } catch {
    return hostHeader
  }
}

/** Whether a required (proxy) header is absent or wrong. */
export const missingHeader = (headers: http.IncomingHttpHeaders, required: Readonly<Record<string, string>>): boolean =>
  Object.entries(required).some(([k, v]) => headers[k.toLowerCase()] !== v)

/** aiohttp's origin-only middleware: a loopback Host with a different Origin host gets 403. */
export const originMismatch = (headers: http.IncomingHttpHeaders): boolean => {
  const host = headers.host
  const origin = headers.origin
  if (host === undefined || origin === undefined) return false
  const h = hostname(host)
  if (!LOOPBACK.has(h)) return false
  try {
    return new URL(origin).hostname !== h
  } catch {
    return true
  }
}

export const writeReply = (res: http.ServerResponse, r: Reply): void => {
  const body = r.body ?? ""
  res.writeHead(r.status, { ...r.headers, "content-length": Buffer.byteLength(body) })
  res.end(body)
}

/** The request body, or undefined when it exceeds `limit` bytes (413). */
export const readBody = (req: http.IncomingMessage, limit: number): Promise<Buffer | undefined> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (c: Buffer) => {
      size += c.length
      if (size > limit) {
        req.removeAllListeners("data")
        req.resume()
        resolve(undefined)
        return
      }
      chunks.push(c)
    })
    req.on("end", () => resolve(Buffer.concat(chunks)))
    req.on("error", reject)
  })
