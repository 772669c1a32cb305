/**
 * B4's baseline: a bare node:http server with busboy that parses the same multipart request as
 * `POST /v1/workflow` (fields and file parts, read into memory), parses the workflow JSON, keeps
 * it in a Map under a new id and answers 201 with that id. The Map keeps the latest 1,000
 * entries so that a long run does not grow without bound.
 */
import busboy from "busboy"
import { randomUUID } from "node:crypto"
import * as http from "node:http"
import { serve } from "../lib/child.js"

interface Stored {
  readonly fields: Record<string, string>
  readonly files: Record<string, Buffer>
  readonly workflow: unknown
}

const KEEP = 1000
const stored = new Map<string, Stored>()
let created = 0

const server = http.createServer((req, res) => {
  if (req.method !== "POST" || req.url !== "/v1/workflow") {
    res.writeHead(404).end()
    return
  }
  const fields: Record<string, string> = {}
  const files: Record<string, Buffer> = {}
  let parser: busboy.Busboy
  try {
    parser = busboy({ headers: req.headers, limits: { fileSize: 50 * 1024 * 1024 } })
  } catch {
    res.writeHead(400).end()
    return
  }
  parser.on("field", (name, value) => (fields[name] = value))
  parser.on("file", (name, stream) => {
    const chunks: Array<Buffer> = []
    stream.on("data", (c: Buffer) => chunks.push(c))
    stream.on("end", () => (files[name] = Buffer.concat(chunks)))
  })
  parser.on("close", () => {
    let workflow: unknown
    try {
      workflow = JSON.parse((files["workflow_json"] ?? Buffer.from(fields["workflow_json"] ?? "")).toString("utf8"))
    } catch {
      res.writeHead(400, { "content-type": "application/json" }).end('{"status":400,"message":"workflow_json: not JSON"}')
      return
    }
    const id = randomUUID()
    stored.set(id, { fields, files, workflow })
    created++
    if (stored.size > KEEP) stored.delete(stored.keys().next().value!)
    const body = JSON.stringify({ id, name: fields["name"] ?? "", status: "accepted" })
    res.writeHead(201, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body)
  })
  parser.on("error", () => res.writeHead(400).end())
  req.pipe(parser)
})
server.listen(0, "127.0.0.1", () => {
  serve({ created: () => created }, { url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })
})
process.on("SIGTERM", () => process.exit(0))
