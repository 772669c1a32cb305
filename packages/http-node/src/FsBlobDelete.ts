/**
 * `deletePrefix` of the filesystem store: lists the shard(s) of the prefix (FsBlobNames.ts),
 * and of each file whose name starts as the prefix's do, reads its header (for the blob's size
 * without it), then removes it. Temporary files of puts in progress (`.part`) are left to their
 * put; files from before the present layout are not named by their prefix and are not seen.
 */
import * as nodeFs from "node:fs/promises"
import * as path from "node:path"
import { HEADER_MAX, isNotFound, parseHeader } from "./FsBlobHeader.js"
import { prefixNames } from "./FsBlobNames.js"

/** A blob file's name: hex and dashes, no suffix (`.part`, `.type`). */
const BLOB_FILE = /^[0-9a-f-]+$/

/** The size of a blob file's bytes past its header; none when it is gone already. */
const blobSize = async (file: string): Promise<number | undefined> => {
  const handle = await nodeFs.open(file, "r").catch((e: unknown) => (isNotFound(e) ? undefined : Promise.reject(e)))
  if (handle === undefined) return undefined
  try {
    const first = Buffer.alloc(HEADER_MAX)
    const { bytesRead } = await handle.read(first, 0, HEADER_MAX, 0)
    const { size } = await handle.stat()
    return size - (parseHeader(first.subarray(0, bytesRead))?.length ?? 0)
  } finally {
    await handle.close()
  }
}

/** Deletes the blobs under `prefix` (a safe prefix) in the store at `base`; what was deleted. */
export const deleteUnder = async (base: string, prefix: string): Promise<{ readonly blobs: number; readonly bytes: number }> => {
  const { nameStart, shards } = prefixNames(prefix)
  let blobs = 0
  let bytes = 0
  for (const shard of shards) {
    const names = await nodeFs.readdir(path.join(base, shard)).catch((e: unknown) => (isNotFound(e) ? [] : Promise.reject(e)))
    for (const name of names) {
      if (!name.startsWith(nameStart) || !BLOB_FILE.test(name)) continue
      const file = path.join(base, shard, name)
      const size = await blobSize(file)
      if (size === undefined) continue
      // A type file is beside a copy of a blob from before the header.
      await Promise.all([nodeFs.rm(file, { force: true }), nodeFs.rm(`${file}.type`, { force: true })])
      blobs++
      bytes += size
    }
  }
  return { blobs, bytes }
}
