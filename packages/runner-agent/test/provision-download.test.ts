/** Model provisioning's downloads against a local HTTP server: reuse, resume after a cut, sha256 checks, HTTP errors, redirects, the address guard. */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { ModelFile } from "@wes/core"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import type { ProvisionLine } from "@wes/runner-client/agent-protocol"
import type { ModelStore } from "../src/ModelStore.js"
import { ensureModels } from "../src/Provision.js"
import { exists, listDir, openTestStore, provision, tempModelsDir } from "./provisionHarness.js"
import { type ModelServer, randomModel, sha256Of, startModelServer } from "./provisionServer.js"

let server: ModelServer
let dir: string
const stores: Array<ModelStore> = []
const open = async (options: Parameters<typeof openTestStore>[1] = {}) => {
  const store = await openTestStore(dir, options)
  stores.push(store)
  return store
}

beforeEach(async () => {
  server = await startModelServer()
  dir = await tempModelsDir()
})
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close()
  await server.close()
  await fs.rm(dir, { recursive: true, force: true })
})

const declare = (p: string, sha256: string, filename = "model.safetensors"): ModelFile => ({ url: server.url(p), sha256, folder: "checkpoints", filename })

describe("ensureModels", () => {
  it("downloads a file once, places it, and reuses it afterwards (also after a restart)", async () => {
    const { body, sha256 } = randomModel(300_000)
    server.file("/m", body)
    const store = await open()
    const first = await provision(store, [declare("/m", sha256)])
    expect(first.last).toEqual({ type: "done" })
    expect(first.ends).toBe(1)
    expect(first.lines).toContainEqual({ type: "progress", folder: "checkpoints", filename: "model.safetensors", bytes: 300_000, total: 300_000 })
    expect(sha256Of(await fs.readFile(path.join(dir, "checkpoints", "model.safetensors")))).toBe(sha256)
    expect(store.inventory()).toEqual([{ folder: "checkpoints", filename: "model.safetensors", sha256, bytes: 300_000 }])

    const again = await provision(store, [declare("/m", sha256)])
    expect(again.last).toEqual({ type: "done" })
    const restarted = await open()
    expect(restarted.inventory()).toEqual(store.inventory())
    expect((await provision(restarted, [declare("/m", sha256)])).last).toEqual({ type: "done" })
    expect(server.requests).toHaveLength(1)
    expect(await listDir(path.join(dir, ".wes-agent", "partial"))).toEqual([])
  })

  it("resumes a download the server cut mid-body with a Range request, fetching the file about once", async () => {
    const size = 1 << 20
    const { body, sha256 } = randomModel(size)
    server.file("/big", body)
    server.cutOnce("/big", size / 2)
    const result = await provision(await open(), [declare("/big", sha256)])
    expect(result.last).toEqual({ type: "done" })
    expect(server.requests).toHaveLength(2)
    expect(server.requests[0]!.range).toBeUndefined()
    const start = Number(/^bytes=(\d+)-$/.exec(server.requests[1]!.range ?? "")?.[1])
    expect(start).toBeGreaterThan(0)
    expect(start).toBeLessThanOrEqual(size / 2)
    // What the server sent beyond the file's size is only what the cut lost before reaching the disk.
    expect(server.sent() - size).toBe(size / 2 - start)
    // Most of what the cut answer delivered was kept (a destroyed socket loses what was still in flight, more under load).
    expect(start).toBeGreaterThanOrEqual(size / 4)
    expect(sha256Of(await fs.readFile(path.join(dir, "checkpoints", "model.safetensors")))).toBe(sha256)
  })

  it("keeps the partial of a failed download and resumes it on the next provisioning", async () => {
    const size = 1 << 20
    const { body, sha256 } = randomModel(size)
    server.file("/big", body)
    server.cutOnce("/big", size / 2, 503)
    const store = await open({ attempts: 1 })
    const failed = await provision(store, [declare("/big", sha256)])
    expect(failed.last).toEqual({ type: "failed", filename: "model.safetensors", message: "checkpoints/model.safetensors: the server answered HTTP 503" })
    expect(failed.ends).toBe(1)
    expect(await exists(path.join(dir, "checkpoints", "model.safetensors"))).toBe(false)
    const partial = await fs.stat(path.join(dir, ".wes-agent", "partial", `${sha256}.part`))
    expect(partial.size).toBeGreaterThan(0)

    server.status("/big", undefined)
    expect((await provision(store, [declare("/big", sha256)])).last).toEqual({ type: "done" })
    expect(server.requests.map((r) => r.range)).toEqual([undefined, `bytes=${partial.size}-`, `bytes=${partial.size}-`])
    expect(sha256Of(await fs.readFile(path.join(dir, "checkpoints", "model.safetensors")))).toBe(sha256)
  })

  it("gives up on an answer that stalls past the idle timeout and resumes from what arrived", async () => {
    const { body, sha256 } = randomModel(400_000)
    server.file("/slow", body)
    server.stallOnce("/slow", 100_000)
    const result = await provision(await open({ idleTimeoutMs: 300 }), [declare("/slow", sha256)])
    expect(result.last).toEqual({ type: "done" })
    expect(server.requests.map((r) => r.range)).toEqual([undefined, "bytes=100000-"])
  })

  it("fails naming the file when the server keeps answering with errors", async () => {
    server.status("/down", 503)
    const result = await provision(await open({ attempts: 3 }), [declare("/down", "a".repeat(64))])
    expect(result.last).toEqual({ type: "failed", filename: "model.safetensors", message: "checkpoints/model.safetensors: the server answered HTTP 503" })
    expect(server.requests).toHaveLength(3)
  })

  it("ends with one failed line when its caller goes away mid-download", async () => {
    const { body, sha256 } = randomModel(400_000)
    server.file("/slow", body)
    server.stallOnce("/slow", 100_000)
    const controller = new AbortController()
    const lines: Array<ProvisionLine> = []
    await ensureModels(await open(), [declare("/slow", sha256)], (line) => {
      lines.push(line)
      if (line.type === "progress" && line.bytes > 0) controller.abort()
    }, controller.signal)
    expect(lines.filter((l) => l.type !== "progress")).toEqual([
      { type: "failed", filename: "model.safetensors", message: "checkpoints/model.safetensors: provisioning was cancelled" }
    ])
    expect(await exists(path.join(dir, "checkpoints", "model.safetensors"))).toBe(false)
  })

  it("starts over once when a resumed partial turns out not to be the file's beginning", async () => {
    const { body, sha256 } = randomModel(200_000)
    server.file("/m", body)
    await fs.mkdir(path.join(dir, ".wes-agent", "partial"), { recursive: true })
    await fs.writeFile(path.join(dir, ".wes-agent", "partial", `${sha256}.part`), Buffer.alloc(1000, 7))
    expect((await provision(await open(), [declare("/m", sha256)])).last).toEqual({ type: "done" })
    expect(server.requests.map((r) => r.range)).toEqual(["bytes=1000-", undefined])
    expect(sha256Of(await fs.readFile(path.join(dir, "checkpoints", "model.safetensors")))).toBe(sha256)
  })

  it("refuses a file whose sha256 is not the declared one, leaving neither the file nor its partial", async () => {
    const { body } = randomModel(200_000)
    server.file("/m", body)
    const declared = "0".repeat(64)
    const result = await provision(await open(), [declare("/m", declared)])
    expect(result.last).toMatchObject({ type: "failed", filename: "model.safetensors" })
    const message = result.last?.type === "failed" ? result.last.message : ""
    expect(message).toContain("checkpoints/model.safetensors")
    expect(message).toContain(sha256Of(body))
    expect(message).toContain(declared)
    expect(await exists(path.join(dir, "checkpoints", "model.safetensors"))).toBe(false)
    expect(await listDir(path.join(dir, ".wes-agent", "partial"))).toEqual([])
  })

  it("fails naming the file and the status on an HTTP error, and stops at the first failed file", async () => {
    server.status("/gone", 404)
    const ok = randomModel(1000)
    server.file("/ok", ok.body)
    const result = await provision(await open(), [declare("/gone", "a".repeat(64), "gone.safetensors"), declare("/ok", ok.sha256, "ok.safetensors")])
    expect(result.lines).toEqual([{ type: "failed", filename: "gone.safetensors", message: "checkpoints/gone.safetensors: the server answered HTTP 404" }])
    expect(server.requests.map((r) => r.path)).toEqual(["/gone"])
  })

  it("follows up to 5 redirects and refuses a sixth", async () => {
    const { body, sha256 } = randomModel(1000)
    server.file("/real", body)
    for (let i = 1; i <= 5; i++) server.redirect(`/r${i}`, i === 5 ? "/real" : `/r${i + 1}`)
    server.redirect("/r0", "/r1")
    const store = await open()
    expect((await provision(store, [declare("/r1", sha256)])).last).toEqual({ type: "done" })
    const tooMany = await provision(store, [declare("/r0", sha256, "other.safetensors")])
    expect(tooMany.last).toMatchObject({ type: "failed", filename: "other.safetensors", message: "checkpoints/other.safetensors: more than 5 redirects" })
  })

  it("downloads a file once when two provisionings ask for it at the same time", async () => {
    const { body, sha256 } = randomModel(500_000)
    server.file("/m", body)
    const store = await open()
    const [a, b] = await Promise.all([provision(store, [declare("/m", sha256)]), provision(store, [declare("/m", sha256)])])
    expect([a.last, b.last]).toEqual([{ type: "done" }, { type: "done" }])
    expect(server.requests).toHaveLength(1)
  })

  it("refuses a URL on a private address unless allowed, without connecting", async () => {
    const { body, sha256 } = randomModel(1000)
    server.file("/m", body)
    const result = await provision(await open({ allowPrivateUrls: false }), [declare("/m", sha256)])
    expect(result.last).toMatchObject({ type: "failed", filename: "model.safetensors" })
    const message = result.last?.type === "failed" ? result.last.message : ""
    expect(message).toContain("private")
    expect(message).toContain("--allow-private-model-urls")
    expect(server.requests).toHaveLength(0)
  })

  it("refuses a declaration that is not a plain file name in a model folder, touching nothing", async () => {
    const result = await provision(await open(), [{ ...declare("/m", "a".repeat(64)), filename: "../escape.safetensors" }])
    expect(result.last).toMatchObject({ type: "failed", filename: "../escape.safetensors" })
    expect(server.requests).toHaveLength(0)
  })
})
