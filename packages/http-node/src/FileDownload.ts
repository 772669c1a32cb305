/**
 * The body of a download whose bytes are in a local file (a blob of the directory store:
 * LocalFileContent.ts), read through one reused buffer instead of a fresh 1 MiB buffer per chunk
 * (garbage that V8 lets pile up to some 64 MB before it collects it: the peak RSS of a large
 * download). The buffer is read into again only once node's response holds none of the bytes
 * written from it (its `writableLength` is 0: the socket took them); if the response still holds
 * bytes and no `drain` will tell when it lets go of them, the next read goes to a fresh buffer.
 */
import { StorageError } from "@wes/core"
import * as Stream from "effect/Stream"
import * as nodeFs from "node:fs/promises"
import type { ServerResponse } from "node:http"
import type { LocalFile } from "./LocalFileContent.js"

/** Bytes read at a time: above the response's high-water mark, so each write waits for its drain. */
const CHUNK = 1024 * 1024

/**
 * Whether `res` holds none of the bytes written to it (or is gone): at once, or at its next
 * `drain`; false when it holds bytes and no `drain` is due.
 */
const released = (res: ServerResponse): boolean | Promise<boolean> => {
  if (res.writableLength === 0 || res.destroyed) return true
  if (!res.writableNeedDrain) return false
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done)
      res.off("close", done)
      resolve(res.writableLength === 0 || res.destroyed)
    }
    res.on("drain", done)
    res.on("close", done)
  })
}

async function* chunks(file: LocalFile, res: ServerResponse): AsyncGenerator<Uint8Array> {
  const handle = await nodeFs.open(file.path, "r")
  try {
    let buffer = Buffer.allocUnsafeSlow(CHUNK)
    let read = 0
    const length = file.length ?? Number.POSITIVE_INFINITY
    while (read < length) {
      const { bytesRead } = await handle.read(buffer, 0, Math.min(CHUNK, length - read), file.start + read)
      if (bytesRead === 0) return
      read += bytesRead
      yield buffer.subarray(0, bytesRead)
      // Asked for the next chunk: the response was given this one.
      if (!(await released(res))) buffer = Buffer.allocUnsafeSlow(CHUNK)
    }
  } finally {
    await handle.close()
  }
}

/** The bytes of `file`, as the body of the answer `res` sends. */
export const fileDownload = (file: LocalFile, res: ServerResponse): Stream.Stream<Uint8Array, StorageError> =>
  Stream.fromAsyncIterable(
    chunks(file, res),
    (e) => new StorageError({ message: `blob store: could not read: ${e instanceof Error ? e.message : String(e)}` })
  )
