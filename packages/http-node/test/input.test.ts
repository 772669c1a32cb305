/** Regressions found by the fuzz run (fuzz.test.ts): each answer is a declared one, with the contract's body. */
import * as http from "node:http"
import * as net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ErrorBody, readJson, startServer, type TestServer } from "./harness.js"

/** Sends raw bytes on a fresh connection; resolves with everything the server sent back. */
const raw = (server: TestServer, bytes: string) =>
  new Promise<string>((resolve, reject) => {
    const url = new URL(server.url)
    const socket = net.connect(Number(url.port), url.hostname)
    let answer = ""
    socket.on("data", (d: Buffer) => (answer += d.toString()))
    socket.on("error", reject)
    socket.on("close", () => resolve(answer))
    socket.end(bytes)
  })

describe("malformed input the fuzz run found", () => {
  let server: TestServer
  let auth: Record<string, string>
  beforeAll(async () => {
    server = await startServer()
    auth = (await server.user()).auth
  })
  afterAll(async () => { await server.close() })

  it("answers 400 (not 500) to a multipart boundary the parser cannot read, such as an unquoted '=?='", async () => {
    for (const contentType of ["multipart/form-data; boundary==?=", "multipart/form-data; boundary=x;", "multipart/form-data; boundary=a b"]) {
      const body = "--=?=\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nx\r\n--=?=--\r\n"
      for (const path of ["/v1/template", "/v1/workflow"]) {
        const res = await server.fetch(path, { method: "POST", headers: { ...auth, "content-type": contentType }, body })
        const error = await readJson<ErrorBody>(res)
        expect([contentType, path, res.status, error.message]).toEqual([contentType, path, 400, expect.stringContaining("boundary")])
      }
    }
    // Quoted, the same boundary is fine.
    const body = "--=?=\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nx\r\n--=?=--\r\n"
    const res = await server.fetch("/v1/template", { method: "POST", headers: { ...auth, "content-type": "multipart/form-data; boundary=\"=?=\"" }, body })
    expect([res.status, (await readJson<ErrorBody>(res)).message]).toEqual([400, "description: is required"])
  })

  it("answers a request head over 16 KB with 431 and the contract's JSON body", async () => {
    const res = await server.fetch(`/v1/user?q=${"x".repeat(20_000)}`, { headers: auth })
    expect(res.status).toBe(431)
    expect(res.headers.get("content-type")).toBe("application/json")
    expect(await res.json()).toEqual({ status: 431, message: "The request line and headers exceed 16 KB" })
  })

  it("answers a form whose parts go to disk part-way, with more of the body to come (it used to stall)", async () => {
    // The fuzz run's case: the second file crosses the 1 MiB in-memory budget near its end, so
    // its file is ended within the chunk that filled it; no `drain` follows an end, and the
    // paused request never read the rest. Sent whole with a Content-Length, as the fuzz run did.
    const created = await server.fetch("/v1/template", { method: "POST", headers: auth, body: templateForm() })
    const id = (await readJson<{ id: string }>(created)).id
    const form = new FormData()
    form.append("$../x", new Blob(["é".repeat(186_500)], { type: "image/png" }), "/etc/passwd")
    form.append("file", new Blob(["🙂".repeat(182_150)], { type: "application/json" }), "..")
    form.append("$image", new Blob(["x".repeat(51_200)], { type: "text/plain" }), "i.png")
    form.append("$color", new Blob([""], { type: "application/json" }), "..%2F..%2Fetc")
    form.append("tags", "gpu")
    const encoded = new Request("http://localhost/", { method: "POST", body: form })
    const body = Buffer.from(await encoded.arrayBuffer())
    for (let i = 0; i < 4; i++) {
      const answer = await new Promise<string>((resolve, reject) => {
        const url = new URL(`/v1/template/${id}`, server.url)
        const req = http.request(url, {
          method: "PUT",
          headers: { ...auth, "content-type": encoded.headers.get("content-type")!, "content-length": String(body.byteLength), connection: "close" },
          agent: false,
          timeout: 10_000
        }, (res) => {
          const chunks: Array<Buffer> = []
          res.on("data", (c: Buffer) => chunks.push(c))
          res.on("end", () => resolve(`${res.statusCode} ${Buffer.concat(chunks).toString()}`))
        })
        req.on("error", reject)
        req.on("timeout", () => req.destroy(new Error(`attempt ${i}: no answer within 10 s`)))
        req.end(body)
      })
      const refused = (field: string) => ({ field, message: "is not an accepted field" })
      expect(answer).toBe(`400 ${JSON.stringify({
        status: 400,
        message: "$../x: is not an accepted field",
        details: ["$../x", "file", "$image", "$color", "tags"].map(refused)
      })}`)
    }
  })

  it("answers a request the HTTP parser refuses with 400 and the contract's JSON body", async () => {
    const answer = await raw(server, "GET /v1/user HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n")
    expect(answer).toMatch(/^HTTP\/1\.1 400 /)
    expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))).toEqual({ status: 400, message: "The HTTP request is malformed" })
    expect((await server.fetch("/healthz")).status).toBe(200)
  })
})

const templateForm = () => {
  const form = new FormData()
  form.append("name", "t")
  form.append("description", "d")
  form.append("body", new Blob([JSON.stringify({ "1": { class_type: "SaveImage", inputs: {} } })]), "body.json")
  return form
}
