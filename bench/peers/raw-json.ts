/** B3's baseline: a bare node:http server that returns stored JSON from a Map, by path. */
import * as http from "node:http"
import { serve } from "../lib/child.js"

const bodies = new Map<string, string>()
const server = http.createServer((req, res) => {
  const body = bodies.get(req.url ?? "")
  if (body === undefined) {
    res.writeHead(404, { "content-type": "application/json" }).end('{"status":404,"message":"Not found"}')
    return
  }
  res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body)
})
server.listen(0, "127.0.0.1", () => {
  const address = server.address() as { port: number }
  serve({
    set: (args) => {
      const { body, path } = args as { readonly path: string; readonly body: string }
      bodies.set(path, body)
      return true
    }
  }, { url: `http://127.0.0.1:${address.port}` })
})
process.on("SIGTERM", () => server.close(() => process.exit(0)))
