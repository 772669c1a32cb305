/**
 * Frees the memory of a request body's chunks as soon as a spilled part's file has them, instead
 * of leaving it to the garbage collector. Node hands each chunk of a body over in a buffer of its
 * own (a copy per socket read); V8 collects such buffers only once some 64 MB of them have piled
 * up (its young backing-store trigger, whatever the chunk size), so a large upload alone grew the
 * server's RSS by 50-60 MB, against the bound of 64 MB for a gigabyte each way.
 *
 * A chunk is freed (its ArrayBuffer detached: `transfer(0)` releases the memory at once) only when
 * it is alone in its ArrayBuffer, the parser has finished with it, EVERY byte of it was handed over
 * as a file part's content, and every write of those bytes to the part's file has completed. A
 * chunk holding anything else (a boundary, headers, a text field, bytes the parser keeps for the
 * next chunk, a part held in memory) is never touched: the collector frees it as before.
 */

interface Tracked {
  /** Bytes of the chunk. */
  readonly size: number
  /** Of them, bytes handed over as file content. */
  filed: number
  /** Writes of them to a file not yet completed. */
  writing: number
  /** Whether the parser has finished with the chunk. */
  parsed: boolean
}

/** ES2024's `ArrayBuffer.prototype.transfer` (Node 21+; the repository's lib is ES2022). */
type Transferable = ArrayBuffer & { transfer(length: number): ArrayBuffer }

const isOwnBuffer = (chunk: Uint8Array): boolean =>
  chunk.byteOffset === 0 && chunk.buffer instanceof ArrayBuffer && chunk.byteLength === chunk.buffer.byteLength &&
  typeof (chunk.buffer as Partial<Transferable>).transfer === "function"

/** The chunks of one request body. */
export const makeSpilledChunks = () => {
  const tracked = new Map<ArrayBufferLike, Tracked>()
  const settle = (buffer: ArrayBufferLike, t: Tracked) => {
    if (!t.parsed || t.writing > 0) return
    tracked.delete(buffer)
    if (t.filed === t.size) (buffer as Transferable).transfer(0)
  }
  return {
    /** A chunk of the body, before the parser sees it. */
    received: (chunk: Uint8Array): void => {
      if (isOwnBuffer(chunk) && !tracked.has(chunk.buffer)) tracked.set(chunk.buffer, { size: chunk.byteLength, filed: 0, writing: 0, parsed: false })
    },
    /** The parser has finished with `chunk` (it keeps no view of it past this point unless it handed the bytes on). */
    parsed: (chunk: Uint8Array): void => {
      const t = tracked.get(chunk.buffer)
      if (t === undefined) return
      t.parsed = true
      settle(chunk.buffer, t)
    },
    /**
     * A view of a chunk is being written to a file part; the callback to call once the write has
     * completed (or failed).
     */
    filing: (view: Uint8Array): () => void => {
      const t = tracked.get(view.buffer)
      if (t === undefined || t.parsed) return noop
      t.filed += view.byteLength
      t.writing++
      return () => {
        t.writing--
        settle(view.buffer, t)
      }
    }
  }
}

const noop = () => {}
