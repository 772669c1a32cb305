/**
 * The agent's own routes as WES calls them over the connection: status, cleanup, provisioning's
 * framing, and the answers to requests it refuses.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { AgentStatus, CleanupResult } from "@wes/runner-client/agent-protocol"
import { resolveFolders } from "@wes/runner-agent"
import { FakeComfyUI } from "@wes/runner-client/testing"
import * as Schema from "effect/Schema"
import { afterEach, describe, expect, it } from "vitest"
import { request, runAgent, startWes, tempDir } from "./harness.js"
import { randomModel, startModelServer } from "./provisionServer.js"

const fakes: Array<FakeComfyUI> = []
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})
const comfy = async () => {
  const fake = await FakeComfyUI.start()
  fakes.push(fake)
  return fake.url
}
const decodeStatus = Schema.decodeUnknownSync(AgentStatus)
const decodeCleanup = Schema.decodeUnknownSync(CleanupResult)

const write = async (file: string, text = "x") => {
  await fs.mkdir(path.dirname(file), { recursive: true })
  await fs.writeFile(file, text)
}
const exists = (file: string) => fs.access(file).then(() => true, () => false)

describe("GET /status", () => {
  it("reports ComfyUI's device when nvidia-smi is absent, disk of the output folder, budget and cleanup", async () => {
    const dir = await tempDir()
    await fs.mkdir(path.join(dir, "output"), { recursive: true })
    const wes = await startWes()
    await runAgent(wes, await comfy(), {
      folders: resolveFolders({ comfyui: dir }),
      modelBudgetBytes: 5e9,
      cleanup: false,
      nvidiaSmi: path.join(dir, "no-nvidia-smi")
    })
    const answer = await request((await wes.connection()).session, "GET", "/status")
    expect(answer.status).toBe(200)
    const status = decodeStatus(JSON.parse(answer.body))
    expect(status.gpu?.name).toBe("cpu")
    expect(status.gpu?.vram_total_bytes).toBeGreaterThan(0)
    expect(status.disk?.total_bytes).toBeGreaterThan(0)
    expect(status.disk!.free_bytes).toBeLessThanOrEqual(status.disk!.total_bytes)
    expect(status).toMatchObject({ models: [], model_budget_bytes: 5e9, cleanup: false })
    expect(status.agent_version).toMatch(/^\d+\.\d+\.\d+/)
  })

  it("reports the GPU nvidia-smi lists, in bytes", async () => {
    const dir = await tempDir()
    const smi = path.join(dir, "nvidia-smi")
    await fs.writeFile(smi, "#!/bin/sh\necho 'NVIDIA GeForce RTX 4090, 24564, 20000'\necho 'NVIDIA GeForce RTX 3090, 24576, 24000'\n", { mode: 0o755 })
    const wes = await startWes()
    await runAgent(wes, await comfy(), { nvidiaSmi: smi })
    const status = decodeStatus(JSON.parse((await request((await wes.connection()).session, "GET", "/status")).body))
    expect(status.gpu).toEqual({ name: "NVIDIA GeForce RTX 4090", vram_total_bytes: 24564 * 2 ** 20, vram_free_bytes: 20000 * 2 ** 20 })
    expect(status.disk).toBeNull()
  })
})

describe("POST /cleanup", () => {
  const setUp = async (cleanup = true) => {
    const dir = await tempDir()
    const outside = await tempDir()
    const run = ["output/a.png", "output/sub/b.png", "temp/c.png", "input/d.png"].map((f) => path.join(dir, f))
    const others = ["output/other.png", "output/sub/other.png", "temp/other.png", "input/keep.png"].map((f) => path.join(dir, f))
    for (const f of [...run, ...others]) await write(f)
    await write(path.join(outside, "secret.txt"))
    await fs.symlink(outside, path.join(dir, "output", "link"))
    const wes = await startWes()
    await runAgent(wes, await comfy(), { folders: resolveFolders({ comfyui: dir }), cleanup })
    const { session } = await wes.connection()
    return { dir, outside, run, others, session }
  }
  const body = (extra: { outputs?: Array<object>; inputs?: Array<object> } = {}) =>
    JSON.stringify({
      prompt_id: "p1",
      outputs: [
        { filename: "a.png", subfolder: "", type: "output" },
        { filename: "b.png", subfolder: "sub", type: "output" },
        { filename: "c.png", subfolder: "", type: "temp" },
        { filename: "gone.png", subfolder: "", type: "output" },
        ...(extra.outputs ?? [])
      ],
      inputs: [{ filename: "d.png", subfolder: "", type: "input" }, ...(extra.inputs ?? [])]
    })

  it("deletes exactly the run's files, skips missing ones and one behind a symlink out", async () => {
    const { outside, run, others, session } = await setUp()
    const answer = await request(session, "POST", "/cleanup", body({ outputs: [{ filename: "secret.txt", subfolder: "link", type: "output" }] }))
    expect(answer.status).toBe(200)
    expect(decodeCleanup(JSON.parse(answer.body))).toEqual({ deleted: 4, skipped: 2 })
    for (const f of run) expect(await exists(f)).toBe(false)
    for (const f of others) expect(await exists(f)).toBe(true)
    expect(await exists(path.join(outside, "secret.txt"))).toBe(true)
  })

  it("refuses a path leaving its folder with 400 and deletes nothing", async () => {
    const { run, others, session } = await setUp()
    for (const bad of [
      { outputs: [{ filename: "keep.png", subfolder: "../input", type: "output" }] },
      { outputs: [{ filename: "../input/keep.png", subfolder: "", type: "output" }] },
      { inputs: [{ filename: "x", subfolder: "/etc", type: "input" }] },
      { inputs: [{ filename: "a.png", subfolder: "", type: "output" }] }
    ]) {
      const answer = await request(session, "POST", "/cleanup", body(bad))
      expect(answer.status).toBe(400)
      expect(JSON.parse(answer.body)).toHaveProperty("message")
    }
    for (const f of [...run, ...others]) expect(await exists(f)).toBe(true)
  })

  it("deletes nothing when cleanup is off", async () => {
    const { run, session } = await setUp(false)
    const answer = await request(session, "POST", "/cleanup", body())
    expect(JSON.parse(answer.body)).toEqual({ deleted: 0, skipped: 5 })
    for (const f of run) expect(await exists(f)).toBe(true)
  })

  it("answers 409 naming the flag when ComfyUI's folders were not given", async () => {
    const wes = await startWes()
    await runAgent(wes, await comfy())
    const answer = await request((await wes.connection()).session, "POST", "/cleanup", body())
    expect(answer.status).toBe(409)
    expect(JSON.parse(answer.body).message).toContain("--comfyui-dir or --output-dir")
  })
})

describe("requests the agent refuses", () => {
  it("answers 400 to a body that is not the protocol's, 413 past 1 MiB, 404 and 405", async () => {
    const wes = await startWes()
    await runAgent(wes, await comfy())
    const { session } = await wes.connection()
    expect((await request(session, "POST", "/cleanup", "{")).status).toBe(400)
    expect((await request(session, "POST", "/cleanup", JSON.stringify({ prompt_id: 1 }))).status).toBe(400)
    expect((await request(session, "POST", "/provision", JSON.stringify({ models: [{ url: "ftp://x" }] }))).status).toBe(400)
    expect((await request(session, "POST", "/cleanup", "x".repeat(8 * 1024 * 1024))).status).toBe(413)
    expect((await request(session, "GET", "/nothing")).status).toBe(404)
    expect((await request(session, "POST", "/status", "{}")).status).toBe(405)
  })
})

describe("POST /provision", () => {
  it("ends with a failed line naming the flag when no models folder was given", async () => {
    const wes = await startWes()
    await runAgent(wes, await comfy())
    const model = { url: "https://example.com/m.safetensors", sha256: "a".repeat(64), folder: "checkpoints", filename: "m.safetensors" }
    const answer = await request((await wes.connection()).session, "POST", "/provision", JSON.stringify({ models: [model] }))
    expect(answer.status).toBe(200)
    const lines = answer.body.trim().split("\n").map((l) => JSON.parse(l) as { type: string; filename?: string; message?: string })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ type: "failed", filename: "m.safetensors" })
    expect(lines[0]?.message).toContain("--models-dir")
  })
})

describe("POST /provision over the connection", () => {
  it("streams progress, ends with done, places the file, and the status lists it", async () => {
    const server = await startModelServer()
    const dir = await tempDir()
    const { body, sha256 } = randomModel(3 * 1024 * 1024)
    server.file("/m.safetensors", body)
    const wes = await startWes()
    await runAgent(wes, await comfy(), { folders: resolveFolders({ comfyui: dir }), allowPrivateModelUrls: true })
    const { session } = await wes.connection()
    const model = { url: server.url("/m.safetensors"), sha256, folder: "checkpoints", filename: "m.safetensors" }
    const answer = await request(session, "POST", "/provision", JSON.stringify({ models: [model] }))
    await server.close()
    expect(answer.status).toBe(200)
    const lines = answer.body.trim().split("\n").map((l) => JSON.parse(l) as { type: string; bytes?: number })
    expect(lines.at(-1)).toEqual({ type: "done" })
    expect(lines.filter((l) => l.type === "progress").at(-1)?.bytes).toBe(body.length)
    expect((await fs.readFile(path.join(dir, "models", "checkpoints", "m.safetensors"))).equals(body)).toBe(true)
    const status = decodeStatus(JSON.parse((await request(session, "GET", "/status")).body))
    expect(status.models).toEqual([{ folder: "checkpoints", filename: "m.safetensors", sha256, bytes: body.length }])
  })
})
