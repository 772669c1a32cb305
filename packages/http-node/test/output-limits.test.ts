/**
 * The tier's `max_output_bytes` (WES_TIER_LIMITS), through the server with the dispatcher and the
 * real runner client against the fake ComfyUI: an output file over it fails the workflow with a
 * message naming the file and the limit, is read once (never retried) and no output of the run is
 * listed; a file of exactly the limit is kept whole.
 */
import { FakeComfyUI, largeOutputBytes } from "@wes/runner-client/testing"
import * as zlib from "node:zlib"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { fastDispatch, json, readJson, startServer, type TestServer, type WorkflowDetailJson, workflowForm, type WorkflowSummaryJson } from "./harness.js"
import { poll } from "./polling.js"

const MiB = 1024 * 1024
const LIMIT = 2 * MiB

let server: TestServer
const fakes: Array<FakeComfyUI> = []

beforeAll(async () => { server = await startServer({ dispatcher: fastDispatch, tiers: { pro: { max_output_bytes: LIMIT } } }) })
afterAll(async () => { await server.close() })
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})

/** A pro user with one fake runner; runs `workflow` to its end. */
const runOnFake = async (workflow: unknown) => {
  const fake = await FakeComfyUI.start({ cache: false })
  fakes.push(fake)
  const u = await server.user("pro")
  expect((await server.fetch("/v1/runner", json({ name: "runner", endpoint: fake.url }, u.auth))).status).toBe(201)
  const res = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "limits" }, workflow) })
  expect(res.status).toBe(201)
  const { id } = await readJson<WorkflowSummaryJson>(res)
  const ended = await poll(`workflow ${id} to end`, async () => {
    const w = await readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${id}`, { headers: u.auth }))
    return w.status === "completed" || w.status === "failed" ? w : undefined
  })
  const { outputs } = await readJson<{ outputs: Array<{ id: string; size: number; node_id: string }> }>(
    await server.fetch(`/v1/workflow/${id}/outputs`, { headers: u.auth })
  )
  return { fake, u, id, ended, outputs }
}

/** A generated file of `bytes` (node 1) beside an ordinary small image (node 3). */
const withLargeOutput = (bytes: number) => ({
  "1": { class_type: "FakeLargeOutput", inputs: { bytes, filename_prefix: "large/limit" } },
  "2": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
  "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: "small" } }
})

const crcOf = async (chunks: AsyncIterable<Uint8Array>) => {
  let crc = 0
  let bytes = 0
  for await (const c of chunks) {
    crc = zlib.crc32(c, crc)
    bytes += c.length
  }
  return { bytes, crc }
}

describe("output limits (max_output_bytes)", () => {
  it("fails a workflow whose output file is over the tier's limit, naming the file and the limit, without retrying it or listing any output", async () => {
    const { ended, fake, outputs } = await runOnFake(withLargeOutput(LIMIT + 1))
    expect([ended.status, ended.exception_type, ended.exception_message]).toEqual([
      "failed",
      "OutputTooLarge",
      "The run succeeded but an output is over its limit: The output file limit_00001_.bin (node 1) is larger than 2 MB, the pro tier's output limit (max_output_bytes)"
    ])
    expect(outputs).toEqual([])
    // Read once: a file over the limit is not copied again.
    expect(fake.requests.filter((r) => r.path.startsWith("/view") && r.path.includes("limit_00001_.bin"))).toHaveLength(1)
  })

  it("keeps an output of exactly the limit, whole", async () => {
    const { id, outputs, u } = await runOnFake(withLargeOutput(LIMIT))
    const large = outputs.find((o) => o.node_id === "1")
    expect(large?.size).toBe(LIMIT)
    const res = await server.fetch(`/v1/workflow/${id}/outputs/${large!.id}`, { headers: u.auth })
    expect(await crcOf(res.body!)).toEqual(await crcOf(largeOutputBytes(LIMIT)))
  })
})
