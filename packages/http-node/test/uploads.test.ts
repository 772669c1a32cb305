import v8 from "node:v8"
import vm from "node:vm"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ErrorBody, json, readJson, smokeWorkflow, startServer, type TestServer, type WorkflowDetailJson, type WorkflowSummaryJson } from "./harness.js"

const MB = 1024 * 1024

/** A multipart body streamed in 64 KB chunks, `fileBytes` long in its file part, without holding it. */
const streamedForm = (boundary: string, fileBytes: number, workflow: unknown) => {
  const enc = new TextEncoder()
  const head = enc.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nbig\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="workflow_json"; filename="wf.json"\r\nContent-Type: application/json\r\n\r\n${JSON.stringify(workflow)}\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="$photo"; filename="big.png"\r\nContent-Type: image/png\r\n\r\n`
  )
  const tail = enc.encode(`\r\n--${boundary}--\r\n`)
  const chunk = new Uint8Array(64 * 1024).fill(7)
  let sent = 0
  let stage = 0
  return {
    length: head.length + fileBytes + tail.length,
    stream: new ReadableStream<Uint8Array>({
      pull(controller) {
        if (stage === 0) {
          controller.enqueue(head)
          stage = 1
        } else if (stage === 1) {
          const n = Math.min(chunk.length, fileBytes - sent)
          controller.enqueue(n === chunk.length ? chunk : chunk.subarray(0, n))
          sent += n
          if (sent >= fileBytes) stage = 2
        } else {
          controller.enqueue(tail)
          controller.close()
        }
      }
    })
  }
}

describe("uploads", () => {
  let server: TestServer
  let auth: Record<string, string>
  const wf = { ...smokeWorkflow(), "4": { class_type: "LoadImage", inputs: { image: "$file(photo)" } } }
  beforeAll(async () => {
    server = await startServer()
    const u = await server.user()
    auth = u.auth
    await server.fetch("/v1/runner", json({ name: "r", endpoint: "http://127.0.0.1:8188" }, auth))
  })
  afterAll(async () => { await server.close() })

  const send = (fileBytes: number, withLength: boolean) => {
    const boundary = "wes-test-boundary"
    const body = streamedForm(boundary, fileBytes, wf)
    return server.fetch("/v1/workflow", {
      method: "POST",
      headers: { ...auth, "content-type": `multipart/form-data; boundary=${boundary}`, ...(withLength ? { "content-length": String(body.length) } : {}) },
      body: body.stream,
      duplex: "half"
    } as RequestInit)
  }

  it("rejects an upload just over 50 MB while it streams, naming the limit, with memory staying bounded", async () => {
    // Live memory (after a collection), so garbage chunks do not count: buffering the body would
    // hold at least 50 MB at some point; streaming it to disk holds a few chunks.
    v8.setFlagsFromString("--expose-gc")
    const gc = vm.runInNewContext("gc") as () => void
    const live = () => {
      // Twice: V8 frees dead ArrayBuffers' memory after a collection, not during it, so one
      // collection can still count garbage chunks (seen as 20-30 MB spikes in CI).
      gc()
      gc()
      const m = process.memoryUsage()
      return m.heapUsed + m.arrayBuffers
    }
    const before = live()
    let peak = before
    const sampler = setInterval(() => { peak = Math.max(peak, live()) }, 200)
    const res = await send(50 * MB + 1024, false)
    clearInterval(sampler)
    const body = await readJson<ErrorBody>(res)
    expect(res.status).toBe(400)
    expect(body.message).toBe("Request body exceeds 50 MB, the free tier's upload limit per request (max_upload_bytes)")
    expect(body.details).toEqual([{ field: "body", message: "must be at most 50 MB (all parts together; the free tier's max_upload_bytes)" }])
    expect(peak - before).toBeLessThan(20 * MB)
  })

  it("rejects a declared Content-Length over 50 MB before reading the body", async () => {
    const res = await send(51 * MB, true)
    expect([res.status, (await readJson<ErrorBody>(res)).status]).toEqual([400, 400])
  })

  it("takes the limit from the caller's tier (WES_TIER_LIMITS' max_upload_bytes): a raised limit accepts more, a lowered one refuses sooner, naming it", async () => {
    const tiered = await startServer({ tiers: { pro: { max_upload_bytes: 80 * MB }, plus: { max_upload_bytes: 10 * MB } } })
    try {
      const send = async (tier: "pro" | "plus", fileBytes: number, withLength: boolean) => {
        const u = await tiered.user(tier)
        await tiered.fetch("/v1/runner", json({ name: "r", endpoint: "http://127.0.0.1:8188" }, u.auth))
        const form = streamedForm("tier-boundary", fileBytes, wf)
        return tiered.fetch("/v1/workflow", {
          method: "POST",
          headers: { ...u.auth, "content-type": "multipart/form-data; boundary=tier-boundary", ...(withLength ? { "content-length": String(form.length) } : {}) },
          body: form.stream,
          duplex: "half"
        } as RequestInit)
      }
      expect((await send("pro", 60 * MB, false)).status).toBe(201)
      const streamed = await send("plus", 11 * MB, false)
      expect([streamed.status, (await readJson<ErrorBody>(streamed)).message])
        .toEqual([400, "Request body exceeds 10 MB, the plus tier's upload limit per request (max_upload_bytes)"])
      const declared = await send("pro", 81 * MB, true)
      expect([declared.status, (await readJson<ErrorBody>(declared)).message])
        .toEqual([400, "Request body exceeds 80 MB, the pro tier's upload limit per request (max_upload_bytes)"])
    } finally {
      await tiered.close()
    }
  })

  it("accepts a file parameter of 49 MB", async () => {
    const res = await send(49 * MB, false)
    expect(res.status).toBe(201)
    const w = await readJson<WorkflowSummaryJson>(res)
    const detail = await readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${w.id}`, { headers: auth }))
    expect(detail.workflow_params).toEqual([["$file(photo)", `inputs/${w.id}/photo/big.png`]])
  })
})
