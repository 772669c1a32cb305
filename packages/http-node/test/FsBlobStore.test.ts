import * as NodeServices from "@effect/platform-node/NodeServices"
import { BlobStore, StorageError } from "@wes/core"
import { runStoreConformance } from "@wes/core/testing"
import { MemoryStoreLive } from "@wes/storage-memory"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs"
import { createHash } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { FsBlobStoreLive } from "../src/FsBlobStore.js"
import { fileBacked } from "../src/LocalFileContent.js"

// The memory store with its blobs on disk: the blob cases of the conformance suite hit the files.
const dir = mkdtempSync(join(tmpdir(), "wes-blobs-"))
const store = Layer.merge(MemoryStoreLive, FsBlobStoreLive(dir).pipe(Layer.provide(NodeServices.layer)))

runStoreConformance("filesystem blob store conformance", store, { describe, it, afterAll })
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe("filesystem blob store layout", () => {
  it("leaves nothing behind once blobs are deleted, and keeps keys from naming paths", async () => {
    const root = mkdtempSync(join(tmpdir(), "wes-blobs-layout-"))
    try {
      const keys = Array.from({ length: 50 }, (_, i) => `inputs/0190a1b2-c3d4-7e5f-8a9b-${String(i).padStart(12, "0")}/photo/cat.png`)
      const leftovers = await Effect.runPromise(Effect.gen(function*() {
        const blobs = yield* BlobStore
        for (const key of keys) yield* blobs.put(key, Stream.make(new TextEncoder().encode(key)), "image/png")
        for (const key of keys) {
          const got = yield* blobs.get(key)
          expect(Option.isSome(got) && got.value.content_type).toBe("image/png")
        }
        for (const key of keys) yield* blobs.delete(key)
        return listFiles(root)
      }).pipe(Effect.provide(FsBlobStoreLive(root).pipe(Layer.provide(NodeServices.layer)))))
      // Only the shard directories made at start remain: no file, no per-workflow directory.
      expect(leftovers.files).toEqual([])
      expect(leftovers.dirs).toHaveLength(256)
      expect(leftovers.dirs.every((d) => /^[0-9a-f]{2}$/.test(d))).toBe(true)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

describe("filesystem blob store writes interrupted", () => {
  it("leaves no partial file when a put is interrupted mid-stream", async () => {
    const root = mkdtempSync(join(tmpdir(), "wes-blobs-interrupted-"))
    try {
      const files = await Effect.runPromise(Effect.gen(function*() {
        const blobs = yield* BlobStore
        // The first chunk is written, then the content never ends: the put is interrupted while it waits.
        const started = yield* Deferred.make<void>()
        const endless = Stream.concat(
          Stream.make(new Uint8Array(1024)),
          Stream.fromEffect(Effect.andThen(Deferred.succeed(started, undefined), Effect.never))
        )
        const put = yield* Effect.forkChild(blobs.put("outputs/0190a1b2-c3d4-7e5f-8a9b-000000000001/1/big.bin", endless, "application/octet-stream"))
        yield* Deferred.await(started)
        yield* Fiber.interrupt(put)
        return readdirSync(root, { recursive: true }).map(String).filter((f) => f.includes("/"))
      }).pipe(Effect.provide(FsBlobStoreLive(root).pipe(Layer.provide(NodeServices.layer)))))
      expect(files).toEqual([])
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

describe("filesystem blob store given a spilled upload", () => {
  it("copies the upload's file (several copy buffers' worth) instead of running its stream", async () => {
    const root = mkdtempSync(join(tmpdir(), "wes-blobs-spilled-"))
    try {
      const spilled = join(root, "part-1")
      const bytes = Buffer.concat(Array.from({ length: 3 }, (_, i) => Buffer.alloc(1024 * 1024, i + 1)).concat(Buffer.from("tail!")))
      writeFileSync(spilled, bytes)
      // The stream would fail: only the file may be read.
      const content = fileBacked(Stream.fail(new StorageError({ message: "the stream was run" })), { path: spilled, start: 0 })
      const got = await Effect.runPromise(Effect.gen(function*() {
        const blobs = yield* BlobStore
        const size = yield* blobs.put("inputs/a/data/big.bin", content, "application/octet-stream")
        const blob = yield* blobs.get("inputs/a/data/big.bin")
        const read = Option.isSome(blob) ? Buffer.concat([...yield* Stream.runCollect(blob.value.stream)]) : Buffer.alloc(0)
        return { size, stored: Option.map(blob, (b) => b.size), sha: createHash("sha256").update(read).digest("hex") }
      }).pipe(Effect.provide(FsBlobStoreLive(root).pipe(Layer.provide(NodeServices.layer)))))
      expect(got).toEqual({ size: bytes.length, stored: Option.some(bytes.length), sha: createHash("sha256").update(bytes).digest("hex") })
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

describe("filesystem blob store on a directory emptied while it runs", () => {
  it("stores and copies blobs again once an operator has removed everything in it", async () => {
    const root = mkdtempSync(join(tmpdir(), "wes-blobs-emptied-"))
    try {
      const got = await Effect.runPromise(Effect.gen(function*() {
        const blobs = yield* BlobStore
        for (const entry of readdirSync(root)) rmSync(join(root, entry), { recursive: true, force: true })
        yield* blobs.put("inputs/a/photo/cat.png", Stream.make(new Uint8Array([1, 2, 3])), "image/png")
        for (const entry of readdirSync(root)) rmSync(join(root, entry), { recursive: true, force: true })
        yield* blobs.put("inputs/b/photo/cat.png", Stream.make(new Uint8Array([4, 5])), "image/png")
        const copied = yield* blobs.copy("inputs/b/photo/cat.png", "inputs/c/photo/cat.png")
        const blob = yield* blobs.get("inputs/c/photo/cat.png")
        const bytes = Option.isSome(blob) ? yield* Stream.runCollect(blob.value.stream) : undefined
        return { copied, bytes: bytes === undefined ? undefined : [...bytes].flatMap((c) => [...c]) }
      }).pipe(Effect.provide(FsBlobStoreLive(root).pipe(Layer.provide(NodeServices.layer)))))
      expect(got).toEqual({ copied: true, bytes: [4, 5] })
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

describe("filesystem blob store files", () => {
  const run = <A>(root: string, program: Effect.Effect<A, unknown, BlobStore>) =>
    Effect.runPromise(program.pipe(Effect.provide(FsBlobStoreLive(root).pipe(Layer.provide(NodeServices.layer)))))
  const bytesOf = (blob: Option.Option<{ readonly stream: Stream.Stream<Uint8Array, unknown> }>) =>
    Option.isNone(blob) ? Effect.succeed(undefined) : Effect.map(Stream.runCollect(blob.value.stream), (c) => Buffer.concat([...c]).toString())

  it("keeps a blob and its content type in one file", async () => {
    const root = mkdtempSync(join(tmpdir(), "wes-blobs-one-"))
    try {
      const got = await run(root, Effect.gen(function*() {
        const blobs = yield* BlobStore
        yield* blobs.put("inputs/a/photo/cat.png", Stream.make(new TextEncoder().encode("hello "), new TextEncoder().encode("world")), "image/png")
        const blob = yield* blobs.get("inputs/a/photo/cat.png")
        return { size: Option.map(blob, (b) => b.size), type: Option.map(blob, (b) => b.content_type), bytes: yield* bytesOf(blob) }
      }))
      expect(got).toEqual({ size: Option.some(11), type: Option.some("image/png"), bytes: "hello world" })
      expect(listFiles(root).files).toHaveLength(1)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  it("still reads, copies and deletes a blob written with its type in a file beside it (before the header)", async () => {
    const root = mkdtempSync(join(tmpdir(), "wes-blobs-legacy-"))
    try {
      const key = "inputs/old/photo/cat.png"
      const hash = createHash("sha256").update(key).digest("hex")
      mkdirSync(join(root, hash.slice(0, 2)), { recursive: true })
      writeFileSync(join(root, hash.slice(0, 2), hash), "old bytes")
      writeFileSync(join(root, hash.slice(0, 2), `${hash}.type`), "image/jpeg")
      const got = await run(root, Effect.gen(function*() {
        const blobs = yield* BlobStore
        const blob = yield* blobs.get(key)
        yield* blobs.copy(key, "inputs/new/photo/cat.png")
        const copy = yield* blobs.get("inputs/new/photo/cat.png")
        const read = {
          size: Option.map(blob, (b) => b.size),
          type: Option.map(blob, (b) => b.content_type),
          bytes: yield* bytesOf(blob),
          copyType: Option.map(copy, (b) => b.content_type),
          copyBytes: yield* bytesOf(copy)
        }
        yield* blobs.delete(key)
        yield* blobs.delete("inputs/new/photo/cat.png")
        return read
      }))
      expect(got).toEqual({
        size: Option.some(9),
        type: Option.some("image/jpeg"),
        bytes: "old bytes",
        copyType: Option.some("image/jpeg"),
        copyBytes: "old bytes"
      })
      expect(listFiles(root).files).toEqual([])
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

describe("filesystem blob store deletePrefix", () => {
  it("keeps a workflow's files in one shard, and deletes them there, type files of copied old blobs included", async () => {
    const root = mkdtempSync(join(tmpdir(), "wes-blobs-prefix-"))
    try {
      const w = "0190a1b2-c3d4-7e5f-8a9b-000000000001"
      const other = "0190a1b2-c3d4-7e5f-8a9b-000000000002"
      // A blob from before the header (type beside it), copied under the workflow: the copy keeps a type file.
      const old = createHash("sha256").update("inputs/old/p/a.jpg").digest("hex")
      mkdirSync(join(root, old.slice(0, 2)), { recursive: true })
      writeFileSync(join(root, old.slice(0, 2), old), "old")
      writeFileSync(join(root, old.slice(0, 2), `${old}.type`), "image/jpeg")
      const { before, deleted, after } = await Effect.runPromise(Effect.gen(function*() {
        const blobs = yield* BlobStore
        for (const key of [`outputs/${w}/1/a.png`, `outputs/${w}/2/b.png`, `outputs/${w}/2/c.webm`]) yield* blobs.put(key, [new Uint8Array(10)], "image/png")
        yield* blobs.copy("inputs/old/p/a.jpg", `outputs/${w}/3/a.jpg`)
        yield* blobs.put(`outputs/${other}/1/a.png`, [new Uint8Array(7)], "image/png")
        const before = listFiles(root).files.filter((f) => !f.startsWith(`${old.slice(0, 2)}/${old}`))
        const deleted = yield* blobs.deletePrefix(`outputs/${w}/`)
        return { before, deleted, after: listFiles(root).files.filter((f) => !f.startsWith(`${old.slice(0, 2)}/${old}`)) }
      }).pipe(Effect.provide(FsBlobStoreLive(root).pipe(Layer.provide(NodeServices.layer)))))
      expect(deleted).toEqual({ blobs: 4, bytes: 33 })
      // The workflow's 4 files and 1 type file are gone, from one shard; the other workflow's file remains.
      expect([before.length, after.length]).toEqual([6, 1])
      expect(new Set(before.filter((f) => !after.includes(f)).map((f) => f.split("/")[0])).size).toBe(1)
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

/** Every file and directory under `root`, relative to it. */
const listFiles = (root: string) => {
  const files: Array<string> = []
  const dirs: Array<string> = []
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true })) {
      const path = rel === "" ? entry.name : `${rel}/${entry.name}`
      if (entry.isDirectory()) {
        dirs.push(path)
        walk(path)
      } else files.push(path)
    }
  }
  walk("")
  return { files, dirs }
}
