/**
 * A webhook receiver for the tests: a real node:http server that records every request (headers,
 * raw body, arrival time) and answers with what `answer` says for it: a status, or `"hang"` (never
 * answers, for timeouts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"

export interface Received {
  readonly path: string
  readonly headers: Record<string, string>
  readonly body: string
  readonly at: number
}

export type Answer = number | "hang"

export interface Receiver {
  readonly url: string
  readonly received: Array<Received>
  /** How the next requests are answered (by default 200), given the request and how many came before it. */
  answer: (request: Received, index: number) => Answer
  /** Resolves once `predicate` holds over what was received (checked at each arrival). */
  readonly until: (predicate: (received: ReadonlyArray<Received>) => boolean, timeoutMs?: number) => Promise<ReadonlyArray<Received>>
  readonly close: () => Promise<void>
}

export const startReceiver = async (): Promise<Receiver> => {
  const received: Array<Received> = []
  const hanging: Array<ServerResponse> = []
  const waiters = new Set<() => void>()
  const receiver: Receiver = {
    url: "",
    received,
    answer: () => 200,
    until: (predicate, timeoutMs = 15_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(received)) return
          waiters.delete(check)
          clearTimeout(timer)
          resolve(received.slice())
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`receiver: condition not met after ${timeoutMs} ms; got ${received.length} requests`))
        }, timeoutMs)
        waiters.add(check)
        check()
      }),
    close: () =>
      new Promise((resolve) => {
        for (const res of hanging) res.destroy()
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(", ") : v ?? ""]))
      const request: Received = { path: req.url ?? "/", headers, body: Buffer.concat(chunks).toString("utf8"), at: Date.now() }
      const answer = receiver.answer(request, received.length)
      received.push(request)
      if (answer === "hang") hanging.push(res)
      else res.writeHead(answer, { "content-type": "text/plain" }).end(answer >= 400 ? `error body ${"x".repeat(5000)}` : "ok")
      for (const w of [...waiters]) w()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = (server.address() as { port: number }).port
  return Object.assign(receiver, { url: `http://127.0.0.1:${port}/hook` })
}
