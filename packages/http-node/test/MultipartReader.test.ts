/** The multipart reader on its own: what it reads, how it streams, where files go, and what it refuses. */
import { it } from "@effect/vitest"
import * as NodeServices from "@effect/platform-node/NodeServices"
import { isBlobBytes, TierPolicy, type ValidationError } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import fs from "node:fs"
import type { IncomingMessage } from "node:http"
import { syncBuiltinESMExports } from "node:module"
import os from "node:os"
import path from "node:path"
import { PassThrough } from "node:stream"
import { describe, expect } from "vitest"
import { FormFile } from "@wes/api"
import { type MultipartLimits, MultipartReader } from "../src/MultipartReader.js"
import { eventually } from "./polling.js"

const BOUNDARY = "reader-test"
const MiB = 1024 * 1024

type PartSpec = { readonly name: string; readonly value: string } | { readonly name: string; readonly filename: string; readonly bytes: Uint8Array }

const body = (parts: ReadonlyArray<PartSpec>, close = true): Buffer =>
  Buffer.concat([
    ...parts.map((p) =>
      "value" in p
        ? Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"\r\n\r\n${p.value}\r\n`)
        : Buffer.concat([
          Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${p.name}"; filename="${p.filename}"\r\nContent-Type: image/png\r\n\r\n`),
          p.bytes,
          Buffer.from("\r\n")
        ])
    ),
    Buffer.from(close ? `--${BOUNDARY}--\r\n` : "")
  ])

/** A request as node hands it over: a readable body with headers. */
const request = (headers: Record<string, string> = { "content-type": `multipart/form-data; boundary=${BOUNDARY}` }) =>
  Object.assign(new PassThrough(), { headers }) as PassThrough & IncomingMessage

/** Until the reader has taken every byte written to `req` so far. */
const taken = (req: PassThrough) =>
  eventually(() => `the reader to take what was written (${req.writableLength + req.readableLength} bytes left)`, Effect.sync(() =>
    req.writableLength === 0 && req.readableLength === 0))

const bytes = (n: number, seed = 7) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff)

const contentOf = (file: FormFile) =>
  isBlobBytes(file.content)
    ? Effect.succeed(Buffer.concat(file.content))
    : Effect.map(Stream.runCollect(file.content), (chunks) => Buffer.concat(chunks))

/** A directory of this test's own, for the reader's spill directory. */
const spillRoot = () => fs.mkdtempSync(path.join(os.tmpdir(), "wes-reader-test-"))
const spilled = (root: string) => fs.readdirSync(root).flatMap((d) => fs.readdirSync(path.join(root, d)))

const reader = (limits: Partial<MultipartLimits> = {}) => MultipartReader.layer(limits).pipe(Layer.provide([NodeServices.layer, TierPolicy.Default]))

/** Reads `sent` as one request's body, in chunks of `chunk` bytes. */
const read = (sent: Buffer, chunk = 64 * 1024, headers?: Record<string, string>) =>
  Effect.gen(function*() {
    const multipart = yield* MultipartReader
    const req = request(headers)
    for (let i = 0; i < sent.length; i += chunk) req.write(sent.subarray(i, i + chunk))
    req.end()
    return yield* multipart.read(req)
  })

const refusal = (sent: Buffer, headers?: Record<string, string>) =>
  Effect.map(Effect.flip(read(sent, 64 * 1024, headers)), (e) => ({ message: e.message, details: (e as ValidationError).details }))

describe("MultipartReader", () => {
  it.effect("reads text fields and files, in memory while the request's files stay within the budget", () =>
    Effect.gen(function*() {
      const image = bytes(10_000)
      const form = yield* read(body([{ name: "name", value: "héllo" }, { name: "$photo", filename: "cat.png", bytes: image }]), 1000)
      expect(Object.keys(form)).toEqual(["name", "$photo"])
      expect(form["name"]).toBe("héllo")
      const file = form["$photo"]
      if (!(file instanceof FormFile)) throw new Error("expected a file")
      expect([file.field, file.filename, file.contentType, file.size]).toEqual(["$photo", "cat.png", "image/png", 10_000])
      expect(Buffer.compare(yield* contentOf(file), Buffer.from(image))).toBe(0)
    }).pipe(Effect.provide(reader())))

  it.effect("decodes a file's text across chunk boundaries", () =>
    Effect.gen(function*() {
      const json = JSON.stringify({ text: "ünïcödé ".repeat(500) })
      const form = yield* read(body([{ name: "workflow_json", filename: "w.json", bytes: Buffer.from(json) }]), 7)
      expect(yield* (form["workflow_json"] as FormFile).text).toBe(json)
    }).pipe(Effect.provide(reader())))

  it.live("reads the body as it streams in: the form is done only once its closing boundary arrives", () =>
    Effect.gen(function*() {
      const multipart = yield* MultipartReader
      const req = request()
      const sent = body([{ name: "name", value: "slow" }, { name: "$f", filename: "f.bin", bytes: bytes(5_000) }])
      const reading = yield* Effect.forkChild(multipart.read(req))
      req.write(sent.subarray(0, 3_000))
      yield* taken(req)
      expect(reading.pollUnsafe()).toBeUndefined()
      req.end(sent.subarray(3_000))
      const form = yield* Fiber.join(reading)
      expect((form["$f"] as FormFile).size).toBe(5_000)
    }).pipe(Effect.provide(reader()), Effect.scoped))

  const root = spillRoot()
  it.live("spills files past the memory budget to disk, gives them back byte for byte, and deletes them when the request ends", () =>
    Effect.gen(function*() {
      const big = bytes(300_000, 3)
      const scope = yield* Scope.make()
      const form = yield* read(body([{ name: "$a", filename: "a.bin", bytes: bytes(60_000) }, { name: "$b", filename: "b.bin", bytes: big }])).pipe(
        Scope.provide(scope)
      )
      // The first part fits the budget; the second does not and goes to disk.
      expect(spilled(root)).toHaveLength(1)
      expect(Buffer.compare(yield* contentOf(form["$b"] as FormFile), Buffer.from(big))).toBe(0)
      expect((yield* contentOf(form["$a"] as FormFile)).length).toBe(60_000)
      yield* Scope.close(scope, Exit.void)
      expect(spilled(root)).toEqual([])
    }).pipe(Effect.provide(reader({ memoryBudget: 100_000, directory: root }))))

  const refusedRoot = spillRoot()
  it.live("deletes a refused request's spilled parts when the refusal is answered, with the request's scope still open", () =>
    Effect.gen(function*() {
      // The first file spills (over the budget); the second breaks the form (no closing boundary).
      const sent = Buffer.concat([
        body([{ name: "$a", filename: "a.bin", bytes: bytes(300_000) }], false),
        Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="$b"; filename="b.bin"\r\n\r\nabc`)
      ])
      const refused = yield* Effect.flip(read(sent))
      expect(refused.message).toMatch(/multipart/i)
      expect(spilled(refusedRoot)).toEqual([])
    }).pipe(Effect.provide(reader({ memoryBudget: 100_000, directory: refusedRoot })), Effect.scoped))

  it.live("makes no synchronous filesystem call while it reads a request, spilled parts included", () =>
    Effect.gen(function*() {
      const calls: Array<string> = []
      const originals = new Map<string, unknown>()
      for (const name of Object.keys(fs).filter((k) => k.endsWith("Sync"))) {
        const original: unknown = Reflect.get(fs, name)
        if (typeof original !== "function") continue
        originals.set(name, original)
        Reflect.set(fs, name, function(this: unknown, ...args: Array<unknown>) {
          calls.push(name)
          return Reflect.apply(original, this, args)
        })
      }
      syncBuiltinESMExports()
      const restore = Effect.sync(() => {
        for (const [name, original] of originals) Reflect.set(fs, name, original)
        syncBuiltinESMExports()
      })
      yield* Effect.gen(function*() {
        const form = yield* read(body([{ name: "$big", filename: "big.bin", bytes: bytes(3 * 1024 * 1024) }]))
        expect((yield* contentOf(form["$big"] as FormFile)).length).toBe(3 * 1024 * 1024)
      }).pipe(Effect.scoped, Effect.ensuring(restore))
      expect(calls).toEqual([])
    }).pipe(Effect.provide(reader()), Effect.scoped))

  it.live("refuses a body over the limit while it streams, naming the limit, and drains the rest", () =>
    Effect.gen(function*() {
      const multipart = yield* MultipartReader
      const req = request()
      const reading = yield* Effect.forkChild(Effect.flip(multipart.read(req)))
      const sent = body([{ name: "$f", filename: "f.bin", bytes: bytes(3 * MiB) }])
      let written = 0
      // Written in steps: the refusal comes once 1 MiB is in, long before the end.
      while (written < sent.length && reading.pollUnsafe() === undefined) {
        req.write(sent.subarray(written, written + 16 * 1024))
        written += 16 * 1024
        yield* eventually("the reader to take the step or refuse", Effect.sync(() =>
          (req.writableLength === 0 && req.readableLength === 0) || reading.pollUnsafe() !== undefined))
      }
      const error = yield* Fiber.join(reading)
      expect(written).toBeLessThan(1.2 * MiB)
      expect(error.message).toBe("Request body exceeds the 1 MB limit per request")
      req.end(sent.subarray(written))
      // Nobody pauses the rest: node can read it and answer.
      expect(req.isPaused()).toBe(false)
    }).pipe(Effect.provide(reader({ maxBytes: MiB })), Effect.scoped))

  it.effect("refuses a declared Content-Length over 50 MB before reading the body", () =>
    Effect.gen(function*() {
      const error = yield* refusal(Buffer.alloc(0), {
        "content-type": `multipart/form-data; boundary=${BOUNDARY}`,
        "content-length": String(51 * 1024 * 1024)
      })
      expect(error).toEqual({
        message: "Request body exceeds the 50 MB limit per request",
        details: [{ field: "body", message: "must be at most 50 MB (all parts together)" }]
      })
    }).pipe(Effect.provide(reader())))

  it.effect("answers malformed forms with a 400 that says what is wrong", () =>
    Effect.gen(function*() {
      const multipartType = { "content-type": `multipart/form-data; boundary=${BOUNDARY}` }
      expect(yield* refusal(body([]), { "content-type": "application/json" })).toEqual({
        message: "Content-Type must be multipart/form-data",
        details: [{ field: "Content-Type", message: "must be multipart/form-data" }]
      })
      expect((yield* refusal(body([]), { "content-type": "multipart/form-data; boundary==?=" })).details).toEqual([
        { field: "Content-Type", message: "needs a valid boundary parameter" }
      ])
      expect((yield* refusal(Buffer.alloc(0), { ...multipartType, "content-length": "0" })).message).toBe("The multipart body is empty")
      expect((yield* refusal(body([{ name: "name", value: "x" }], false), multipartType)).message).toBe(
        "The multipart body ended without a complete part and closing boundary"
      )
      expect(yield* refusal(body([{ name: "name", value: "a" }, { name: "name", value: "b" }]), multipartType)).toEqual({
        message: "name: is sent more than once",
        details: [{ field: "name", message: "is sent more than once" }]
      })
    }).pipe(Effect.provide(reader())))

  it.effect("bounds text fields and the number of parts", () =>
    Effect.gen(function*() {
      expect((yield* refusal(body([{ name: "name", value: "x".repeat(MiB + 1) }]))).message).toBe(
        "A text field exceeds 1 MB; send large values as files"
      )
      const many = body(Array.from({ length: 5 }, (_, i) => ({ name: `$p${i}`, value: "1" })))
      expect((yield* refusal(many)).message).toBe("A form may have at most 3 parts")
    }).pipe(Effect.provide(reader({ maxParts: 3 }))))
})

