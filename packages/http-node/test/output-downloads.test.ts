/**
 * Output downloads as a browser, a video player or a script meets them, through the server with
 * the dispatcher and the real runner client against the fake ComfyUI: byte ranges (seeking in a
 * video), ETag revalidation, the original file name, all outputs as one ZIP archive, and a
 * redirect to the store's signed URL.
 */
import { BlobStore, StorageError } from "@wes/core"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { audioWorkflow, FakeComfyUI, largeOutputBytes, videoWorkflow } from "@wes/runner-client/testing"
import { MemoryBlobStore, MemoryStoreLive } from "@wes/storage-memory"
import { parse as parseDisposition } from "content-disposition"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import yauzl from "yauzl"
import { FsBlobStoreLive } from "../src/FsBlobStore.js"
import { fastDispatch, json, readJson, startServer, type TestServer, workflowForm, type WorkflowSummaryJson } from "./harness.js"

interface OutputJson {
  readonly id: string
  readonly filename: string
  readonly subfolder: string
  readonly content_type: string
  readonly size: number
}

const fakes: Array<FakeComfyUI> = []
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})

/** Runs `workflow` for a new user with one fake runner, to its end: the workflow's id and outputs. */
const run = async (server: TestServer, workflow: unknown, name = "media") => {
  const f = await FakeComfyUI.start({ mimeTypes: "builtin" })
  fakes.push(f)
  const u = await server.user("pro")
  expect((await server.fetch("/v1/runner", json({ name: "runner", endpoint: f.url }, u.auth))).status).toBe(201)
  const res = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name }, workflow) })
  expect(res.status).toBe(201)
  const { id } = await readJson<WorkflowSummaryJson>(res)
  // The event stream ends after `done`.
  const stream = await (await server.fetch(`/v1/workflow/${id}/subscribe`, { headers: { ...u.auth, "last-event-id": "0" } })).text()
  expect(stream).toMatch(/event: done\ndata: \{[^\n]*"status":"completed"/)
  const { outputs } = await readJson<{ outputs: Array<OutputJson> }>(await server.fetch(`/v1/workflow/${id}/outputs`, { headers: u.auth }))
  return { u, id, outputs }
}

/** The entries of a ZIP archive: name, compression method and bytes. */
const unzip = (bytes: Buffer) =>
  new Promise<Array<{ name: string; method: number; bytes: Buffer }>>((resolve, reject) => {
    yauzl.fromBuffer(bytes, { lazyEntries: true }, (error, zip) => {
      if (error !== null) return reject(error)
      const entries: Array<{ name: string; method: number; bytes: Buffer }> = []
      zip.on("entry", (entry: yauzl.Entry) =>
        zip.openReadStream(entry, (e, stream) => {
          if (e !== null) return reject(e)
          const chunks: Array<Buffer> = []
          stream.on("data", (c: Buffer) => chunks.push(c))
          stream.on("end", () => {
            entries.push({ name: entry.fileName, method: entry.compressionMethod, bytes: Buffer.concat(chunks) })
            zip.readEntry()
          })
        }))
      zip.on("end", () => resolve(entries))
      zip.on("error", reject)
      zip.readEntry()
    })
  })

describe("output downloads", () => {
  let server: TestServer
  beforeAll(async () => { server = await startServer({ dispatcher: fastDispatch }) })
  afterAll(async () => { await server.close() })

  it("answers a Range with 206 and its bytes (start, middle, suffix, open end), a range past the end with 416", async () => {
    const { u, id, outputs: [video] } = await run(server, videoWorkflow({ prefix: "media/clip", frames: 6 }))
    expect(video).toMatchObject({ filename: "clip_00001_.mp4", content_type: "video/mp4" })
    const url = `/v1/workflow/${id}/outputs/${video!.id}`
    const whole = await server.fetch(url, { headers: u.auth })
    expect(whole.status).toBe(200)
    expect(whole.headers.get("accept-ranges")).toBe("bytes")
    const bytes = Buffer.from(await whole.arrayBuffer())
    const size = bytes.length
    expect(size).toBe(video!.size)
    const cases: Array<[string, number, number]> = [
      ["bytes=0-7", 0, 7],
      ["bytes=4-11", 4, 11],
      ["bytes=-16", size - 16, size - 1],
      [`bytes=${size - 5}-`, size - 5, size - 1],
      [`bytes=10-${size + 100}`, 10, size - 1],
      [`bytes=-${size + 100}`, 0, size - 1]
    ]
    for (const [range, start, end] of cases) {
      const res = await server.fetch(url, { headers: { ...u.auth, range } })
      expect([range, res.status, res.headers.get("content-range")]).toEqual([range, 206, `bytes ${start}-${end}/${size}`])
      expect(res.headers.get("content-type")).toBe("video/mp4")
      expect(res.headers.get("content-length")).toBe(String(end - start + 1))
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes.subarray(start, end + 1))).toBe(true)
    }
    const past = await server.fetch(url, { headers: { ...u.auth, range: `bytes=${size}-` } })
    expect(past.status).toBe(416)
    expect(past.headers.get("content-range")).toBe(`bytes */${size}`)
    expect(await past.json()).toEqual({ status: 416, message: `Range not satisfiable: the output has ${size} bytes` })
    // Several ranges: the whole file.
    const several = await server.fetch(url, { headers: { ...u.auth, range: "bytes=0-1,5-6" } })
    expect([several.status, Buffer.from(await several.arrayBuffer()).length]).toEqual([200, size])
  })

  it("tags each output with a strong ETag: If-None-Match answers 304, If-Range with another tag the whole file", async () => {
    const { u, id, outputs: [audio] } = await run(server, audioWorkflow({ prefix: "media/voice" }))
    const url = `/v1/workflow/${id}/outputs/${audio!.id}`
    const first = await server.fetch(url, { headers: u.auth })
    const etag = first.headers.get("etag")
    expect(etag).toMatch(/^"[^"]+"$/)
    await first.arrayBuffer()
    const again = await server.fetch(url, { headers: { ...u.auth, "if-none-match": `"other", ${etag!}` } })
    expect([again.status, again.headers.get("etag"), await again.text()]).toEqual([304, etag, ""])
    const changed = await server.fetch(url, { headers: { ...u.auth, "if-none-match": "\"other\"" } })
    expect(changed.status).toBe(200)
    await changed.arrayBuffer()
    const sameTag = await server.fetch(url, { headers: { ...u.auth, range: "bytes=0-3", "if-range": etag! } })
    expect([sameTag.status, Buffer.from(await sameTag.arrayBuffer()).toString("latin1")]).toEqual([206, "fLaC"])
    const otherTag = await server.fetch(url, { headers: { ...u.auth, range: "bytes=0-3", "if-range": "\"other\"" } })
    expect([otherTag.status, Buffer.from(await otherTag.arrayBuffer()).length]).toEqual([200, audio!.size])
  })

  it("names the download after the original file, a non-ASCII name in filename* with an ASCII fallback; video inline", async () => {
    const { u, id, outputs: [video] } = await run(server, videoWorkflow({ prefix: "media/Été 写真" }))
    expect(video!.filename).toBe("Été 写真_00001_.mp4")
    const res = await server.fetch(`/v1/workflow/${id}/outputs/${video!.id}`, { headers: u.auth })
    await res.arrayBuffer()
    expect(res.headers.get("content-type")).toBe("video/mp4")
    expect(res.headers.get("content-disposition")).toBe(
      `inline; filename="_t_ ___00001_.mp4"; filename*=UTF-8''${encodeURIComponent("Été 写真_00001_.mp4")}`
    )
  })

  it("streams every output as one ZIP archive named after the workflow, entries stored with their bytes; 404 for another's", async () => {
    const video = videoWorkflow({ prefix: "media/clip" })
    const audio = audioWorkflow({ prefix: "media/voice" })
    const graph = { ...video, "11": audio["1"]!, "12": { ...audio["2"]!, inputs: { ...audio["2"]!.inputs, audio: ["11", 0] } } }
    const { u, id, outputs } = await run(server, graph, "Clips & voices")
    expect(outputs).toHaveLength(2)
    const res = await server.fetch(`/v1/workflow/${id}/outputs.zip`, { headers: u.auth })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("application/zip")
    expect(res.headers.get("content-disposition")).toBe("attachment; filename=\"Clips & voices-outputs.zip\"")
    const archive = Buffer.from(await res.arrayBuffer())
    expect(res.headers.get("content-length")).toBe(String(archive.length))
    const entries = await unzip(archive)
    const files = await Promise.all(outputs.map(async (o) =>
      Buffer.from(await (await server.fetch(`/v1/workflow/${id}/outputs/${o.id}`, { headers: u.auth })).arrayBuffer())))
    expect(entries.map((e) => [e.name, e.method, e.bytes.length]).sort()).toEqual(
      outputs.map((o) => [`${o.subfolder}/${o.filename}`, 0, o.size]).sort()
    )
    for (const [i, o] of outputs.entries()) {
      expect(entries.find((e) => e.name === `${o.subfolder}/${o.filename}`)!.bytes.equals(files[i]!)).toBe(true)
    }
    const other = await server.user("pro")
    const refused = await server.fetch(`/v1/workflow/${id}/outputs.zip`, { headers: other.auth })
    expect([refused.status, await refused.json()]).toEqual([404, { status: 404, message: "Workflow not found" }])
  })
})

describe("output downloads from the directory store (sent from the blob's file through one reused buffer)", () => {
  const dir = mkdtempSync(join(tmpdir(), "wes-downloads-"))
  let server: TestServer
  beforeAll(async () => {
    server = await startServer({ dispatcher: fastDispatch, store: Layer.merge(MemoryStoreLive, FsBlobStoreLive(dir).pipe(Layer.provide(NodeServices.layer))) })
  })
  afterAll(async () => {
    await server.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it("sends a file of several read buffers whole, and ranges across their edges, byte for byte; 304 for its ETag", async () => {
    const size = 3 * 1024 * 1024 + 12_345
    const { u, id, outputs: [big] } = await run(server, { "1": { class_type: "FakeLargeOutput", inputs: { bytes: size, filename_prefix: "large/wes" } } })
    const blocks: Array<Buffer> = []
    for await (const block of largeOutputBytes(size)) blocks.push(block)
    const expected = Buffer.concat(blocks)
    const url = `/v1/workflow/${id}/outputs/${big!.id}`
    const whole = await server.fetch(url, { headers: u.auth })
    expect([whole.status, whole.headers.get("content-length")]).toEqual([200, String(size)])
    expect(Buffer.from(await whole.arrayBuffer()).equals(expected)).toBe(true)
    for (const [start, end] of [[1_048_000, 2_100_000], [0, size - 1], [size - 10, size - 1], [2 * 1024 * 1024, 2 * 1024 * 1024]]) {
      const res = await server.fetch(url, { headers: { ...u.auth, range: `bytes=${start}-${end}` } })
      expect([res.status, res.headers.get("content-range")]).toEqual([206, `bytes ${start}-${end}/${size}`])
      expect(Buffer.from(await res.arrayBuffer()).equals(expected.subarray(start, end + 1))).toBe(true)
    }
    const again = await server.fetch(url, { headers: { ...u.auth, "if-none-match": whole.headers.get("etag")! } })
    expect([again.status, await again.text()]).toEqual([304, ""])
  })
})

describe("outputs archive when the store fails", () => {
  /** A memory store that cannot read back audio files (a lost object, an outage). */
  const FailingStore = Layer.effect(BlobStore, Effect.map(Effect.service(BlobStore), (store) => BlobStore.of({
    ...store,
    get: (key, options) => key.endsWith(".flac") ? Effect.fail(new StorageError({ message: "the store is unavailable" })) : store.get(key, options)
  }))).pipe(Layer.provide(MemoryBlobStore))

  it("cuts the archive short (the client sees an error, never a hang) when an output cannot be read", async () => {
    const server = await startServer({ dispatcher: fastDispatch, store: Layer.merge(MemoryStoreLive, FailingStore) })
    try {
      const video = videoWorkflow({ prefix: "media/clip" })
      const audio = audioWorkflow({ prefix: "media/voice" })
      const { u, id, outputs } = await run(server, { ...video, "11": audio["1"]!, "12": { ...audio["2"]!, inputs: { ...audio["2"]!.inputs, audio: ["11", 0] } } })
      expect(outputs).toHaveLength(2)
      const res = await server.fetch(`/v1/workflow/${id}/outputs.zip`, { headers: u.auth })
      expect(res.status).toBe(200)
      await expect(res.arrayBuffer()).rejects.toThrow()
      expect(server.logs.some((l) => l.includes("output stream failed") && l.includes("the store is unavailable"))).toBe(true)
    } finally {
      await server.close()
    }
  })
})

describe("output downloads redirected to the store (WES_BLOB_REDIRECT)", () => {
  /** A memory store that signs URLs, as S3 does: the key, name and lifetime in the URL. */
  const SigningStore = Layer.effect(BlobStore, Effect.map(Effect.service(BlobStore), (store) => BlobStore.of({
    ...store,
    signedUrl: (key, o) =>
      Effect.succeed(Option.some(`https://store.example/${key}?name=${encodeURIComponent(parseDisposition(o.content_disposition).parameters["filename"] ?? "")}&expires=${o.expires_in_seconds}`))
  }))).pipe(Layer.provide(MemoryBlobStore))

  it("answers 307 to the store's short-lived URL when the store signs them, else streams the file", async () => {
    const signing = await startServer({ dispatcher: fastDispatch, http: { outputs: { redirect: true, signedUrlSeconds: 600 } }, store: Layer.merge(MemoryStoreLive, SigningStore) })
    const plain = await startServer({ dispatcher: fastDispatch, http: { outputs: { redirect: true, signedUrlSeconds: 600 } } })
    try {
      const { u, id, outputs: [video] } = await run(signing, videoWorkflow({ prefix: "media/clip" }))
      const res = await signing.fetch(`/v1/workflow/${id}/outputs/${video!.id}`, { headers: u.auth, redirect: "manual" })
      expect(res.status).toBe(307)
      expect(res.headers.get("location")).toBe(`https://store.example/outputs/${id}/${video!.id}/clip_00001_.mp4?name=clip_00001_.mp4&expires=600`)
      expect(res.headers.get("cache-control")).toBe("private, no-store")

      const streamed = await run(plain, videoWorkflow({ prefix: "media/clip" }))
      const direct = await plain.fetch(`/v1/workflow/${streamed.id}/outputs/${streamed.outputs[0]!.id}`, { headers: streamed.u.auth, redirect: "manual" })
      expect([direct.status, Buffer.from(await direct.arrayBuffer()).length]).toEqual([200, streamed.outputs[0]!.size])
    } finally {
      await Promise.all([signing.close(), plain.close()])
    }
  })
})
