/** Model provisioning's disk rules: the budget with LRU eviction of the agent's own files, and files the agent did not place (used when right, never replaced or deleted). */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { ModelFile } from "@wes/core"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import type { ModelStore } from "../src/ModelStore.js"
import { exists, openTestStore, provision, tempModelsDir } from "./provisionHarness.js"
import { type ModelServer, randomModel, startModelServer } from "./provisionServer.js"

let server: ModelServer
let dir: string
let store: ModelStore | undefined

beforeEach(async () => {
  server = await startModelServer()
  dir = await tempModelsDir()
})
afterEach(async () => {
  await store?.close()
  store = undefined
  await server.close()
  await fs.rm(dir, { recursive: true, force: true })
})

/** A model of `bytes` served at `/<name>` and declared as `checkpoints/<name>.safetensors`. */
const served = (name: string, bytes: number): ModelFile & { readonly body: Buffer } => {
  const { body, sha256 } = randomModel(bytes)
  server.file(`/${name}`, body)
  return { url: server.url(`/${name}`), sha256, folder: "checkpoints", filename: `${name}.safetensors`, body }
}
const placedIn = (m: ModelFile) => path.join(dir, m.folder, m.filename)
const names = (s: ModelStore) => s.inventory().map((m) => m.filename).sort()

describe("the model disk budget", () => {
  it("evicts the agent's least recently used files to fit, never a file it did not place", async () => {
    store = await openTestStore(dir, { budgetBytes: 250_000 })
    const [a, b, c, d] = [served("a", 100_000), served("b", 100_000), served("c", 100_000), served("d", 100_000)]
    // A user's own files: one a workflow declares (verified, used as it is), one nobody declares.
    const user = randomModel(150_000)
    await fs.mkdir(path.join(dir, "loras"), { recursive: true })
    await fs.writeFile(path.join(dir, "loras", "mine.safetensors"), user.body)
    await fs.writeFile(path.join(dir, "checkpoints-notes.txt"), "keep me")
    const mine: ModelFile = { url: server.url("/never-fetched"), sha256: user.sha256, folder: "loras", filename: "mine.safetensors" }

    for (const m of [[a], [b], [a], [c]]) expect((await provision(store, m)).last).toEqual({ type: "done" })
    // a was used after b: b goes.
    expect(await exists(placedIn(b))).toBe(false)
    expect(await exists(placedIn(a))).toBe(true)
    expect(await exists(placedIn(c))).toBe(true)

    expect((await provision(store, [mine])).last).toEqual({ type: "done" })
    expect((await provision(store, [d])).last).toEqual({ type: "done" })
    // The user's file does not count against the budget and is not evicted; a goes (c was used later).
    expect(await exists(placedIn(a))).toBe(false)
    expect(names(store)).toEqual(["c.safetensors", "d.safetensors", "mine.safetensors"])
    expect(await fs.readFile(path.join(dir, "loras", "mine.safetensors"))).toEqual(user.body)
    expect(await fs.readFile(path.join(dir, "checkpoints-notes.txt"), "utf8")).toBe("keep me")
    expect(server.requests.map((r) => r.path)).toEqual(["/a", "/b", "/c", "/d"])
  })

  it("fails naming the file when what the workflow needs does not fit, evicting nothing", async () => {
    store = await openTestStore(dir, { budgetBytes: 250_000 })
    const [c, d, e] = [served("c", 100_000), served("d", 100_000), served("e", 100_000)]
    expect((await provision(store, [c, d])).last).toEqual({ type: "done" })
    const result = await provision(store, [c, d, e])
    expect(result.last).toMatchObject({ type: "failed", filename: "e.safetensors" })
    const message = result.last?.type === "failed" ? result.last.message : ""
    expect(message).toContain("checkpoints/e.safetensors")
    expect(message).toContain("needs 97.66 KiB (100000 bytes)")
    expect(message).toContain("budget is 244.14 KiB (250000 bytes)")
    expect(message).toContain("195.31 KiB (200000 bytes) of it is held by files this workflow")
    expect(await exists(placedIn(c))).toBe(true)
    expect(await exists(placedIn(d))).toBe(true)
    expect(await exists(placedIn(e))).toBe(false)

    const huge = served("huge", 300_000)
    expect((await provision(store, [huge])).last).toMatchObject({ type: "failed", filename: "huge.safetensors" })
    expect(names(store)).toEqual(["c.safetensors", "d.safetensors"])
  })
})

describe("files the agent did not place", () => {
  it("refuses one with another sha256 and leaves it untouched", async () => {
    store = await openTestStore(dir)
    const wanted = served("m", 1000)
    const theirs = Buffer.from("a user's own checkpoint")
    await fs.mkdir(path.join(dir, "checkpoints"), { recursive: true })
    await fs.writeFile(placedIn(wanted), theirs)
    const result = await provision(store, [wanted])
    expect(result.last).toMatchObject({ type: "failed", filename: "m.safetensors" })
    const message = result.last?.type === "failed" ? result.last.message : ""
    expect(message).toContain("exists and is not the declared file")
    expect(message).toContain("the agent does not replace files it did not place")
    expect(await fs.readFile(placedIn(wanted))).toEqual(theirs)
    expect(server.requests).toHaveLength(0)
  })

  it("replaces a file the agent placed when a newer declaration names another sha256", async () => {
    store = await openTestStore(dir)
    const v1 = served("v1", 1000)
    const v2 = { ...served("v2", 2000), filename: v1.filename }
    expect((await provision(store, [v1])).last).toEqual({ type: "done" })
    expect((await provision(store, [v2])).last).toEqual({ type: "done" })
    expect(await fs.readFile(placedIn(v1))).toEqual(v2.body)
    expect(store.inventory()).toEqual([{ folder: "checkpoints", filename: v1.filename, sha256: v2.sha256, bytes: 2000 }])
  })
})
