/**
 * B11's input baseline: a bare node:http server with busboy that streams each file part of a
 * multipart request to a file (text fields read into memory), answering 201 once every file is
 * on disk. Files go to a temporary directory, each deleted once written, so a long run does not
 * fill the disk.
 */
import busboy from "busboy"
import { randomUUID } from "node:crypto"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { pipeline } from "node:stream/promises"
import { serve } from "../lib/child.js"

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "wes-bench-busboy-"))
let created = 0

const server = http.createServer((req, res) => {
  if (req.method !== "POST" || req.url !== "/v1/workflow") {
    res.writeHead(404).end()
    return
  }
  const fields: Record<string, string> = {}
  const written: Array<Promise<string>> = []
  let parser: busboy.Busboy
  try {
    parser = busboy({ headers: req.headers })
  } catch {
    res.writeHead(400).end()
    return
  }
  parser.on("field", (name, value) => (fields[name] = value))
  parser.on("file", (_name, stream) => {
    const file = path.join(dir, randomUUID())
    written.push(pipeline(stream, fs.createWriteStream(file)).then(() => file))
  })
  parser.on("close", () => {
    void Promise.all(written).then((files) => {
      created++
      for (const f of files) fs.rmSync(f, { force: true })
      const body = JSON.stringify({ id: randomUUID(), name: fields["name"] ?? "", status: "accepted" })
      res.writeHead(201, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body)
    }, () => res.writeHead(500).end())
  })
  parser.on("error", () => res.writeHead(400).end())
  req.pipe(parser)
})
server.listen(0, "127.0.0.1", () => {
  serve({ created: () => created }, { url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })
})
process.on("SIGTERM", () => {
  fs.rmSync(dir, { recursive: true, force: true })
  process.exit(0)
})
