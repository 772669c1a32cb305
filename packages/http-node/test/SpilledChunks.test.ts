import { describe, expect, it } from "vitest"
import { makeSpilledChunks } from "../src/SpilledChunks.js"

/** A chunk alone in its ArrayBuffer, as node hands over a request body's chunks. */
const own = (size: number) => Buffer.alloc(size, 7).subarray(0)

describe("spilled chunks", () => {
  it("frees a chunk once the parser is done with it and a file has every byte of it written", () => {
    const chunks = makeSpilledChunks()
    const chunk = Buffer.from(new ArrayBuffer(64 * 1024))
    chunks.received(chunk)
    const first = chunks.filing(chunk.subarray(0, 1000))
    const rest = chunks.filing(chunk.subarray(1000))
    chunks.parsed(chunk)
    first()
    expect(chunk.buffer.byteLength).toBe(64 * 1024)
    rest()
    expect(chunk.buffer.byteLength).toBe(0)
  })

  it("keeps a chunk that holds anything besides file bytes, or that shares its ArrayBuffer", () => {
    const chunks = makeSpilledChunks()
    const boundary = Buffer.from(new ArrayBuffer(1024))
    chunks.received(boundary)
    const written = chunks.filing(boundary.subarray(100))
    chunks.parsed(boundary)
    written()
    expect(boundary.buffer.byteLength).toBe(1024)

    const pooled = Buffer.from("a small chunk from node's pool")
    chunks.received(pooled)
    const done = chunks.filing(pooled)
    chunks.parsed(pooled)
    done()
    expect(pooled.toString()).toBe("a small chunk from node's pool")

    // Held in memory (a part under the budget): never filed, never freed.
    const held = own(2048)
    chunks.received(held)
    chunks.parsed(held)
    expect(held.buffer.byteLength).toBe(2048)
  })
})
