/**
 * Makes one declared model file be at `<modelsDir>/<folder>/<filename>` (issue 34, item 3).
 * A file the agent placed with the same sha256 is reused (its last use refreshed); one it placed
 * with another sha256 is replaced. A file it did not place is hashed (the result kept while its
 * size and mtime stay the same): the declared sha256 uses it as it is, another fails and leaves
 * it untouched. Otherwise the file is downloaded and verified (`ModelDownload`), fsynced, and
 * renamed into place (copied next to it first when the models folder is on another disk).
 * One placement per file at a time, one download per sha256 at a time.
 */
import { createHash } from "node:crypto"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { ModelFile } from "@wes/core"
import { hashFile, downloadModel, type OnBytes } from "./ModelDownload.js"
import { describeError, ModelProvisionFailed } from "./ModelErrors.js"
import type { ManifestEntry } from "./ModelManifest.js"
import type { ModelStore } from "./ModelStore.js"

const hashOf = async (file: string, onBytes: (bytes: number) => void, signal: AbortSignal | undefined) => {
  const hash = createHash("sha256")
  await hashFile(file, hash, onBytes, signal)
  return hash.digest("hex")
}

const sameFile = (entry: ManifestEntry, stat: { size: number; mtimeMs: number }) => entry.bytes === stat.size && entry.mtime_ms === stat.mtimeMs

/** fsyncs a directory so a rename in it survives a crash (not possible on every platform: there, skipped). */
const syncDir = async (dir: string) => {
  const handle = await fs.open(dir, "r").catch((e: NodeJS.ErrnoException) => {
    if (e.code === "EISDIR" || e.code === "EPERM" || e.code === "EACCES") return undefined
    throw e
  })
  if (handle === undefined) return
  try {
    await handle.sync().catch((e: NodeJS.ErrnoException) => {
      if (e.code !== "EINVAL" && e.code !== "ENOTSUP") throw e
    })
  } finally {
    await handle.close()
  }
}

/** Moves the verified partial to `target` atomically (same disk: a rename; another disk: a copy beside it, then a rename). */
const moveIntoPlace = async (partial: string, target: string) => {
  await fs.mkdir(path.dirname(target), { recursive: true })
  try {
    await fs.rename(partial, target)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EXDEV") throw e
    const beside = path.join(path.dirname(target), `.${path.basename(target)}.wes-agent-copy`)
    await fs.copyFile(partial, beside)
    const handle = await fs.open(beside, "r+")
    await handle.sync().finally(() => handle.close())
    await fs.rename(beside, target)
    await fs.rm(partial, { force: true })
  }
  await syncDir(path.dirname(target))
}

/** Places `model`, reporting bytes; fails with a `ModelProvisionFailed`. */
export const placeModel = (store: ModelStore, model: ModelFile, onBytes: OnBytes, signal?: AbortSignal): Promise<void> =>
  store.exclusive(`file:${model.folder}/${model.filename}`, async () => {
    const target = store.targetPath(model.folder, model.filename)
    const stat = await fs.stat(target).catch((e: NodeJS.ErrnoException) => {
      if (e.code === "ENOENT") return undefined
      throw e
    })
    const entry = store.entry(model.folder, model.filename)
    if (stat !== undefined) {
      if (!stat.isFile()) throw new ModelProvisionFailed("conflict", "something that is not a file is in its place; the agent does not replace files it did not place")
      if (entry?.placed === true && sameFile(entry, stat)) {
        if (entry.sha256 === model.sha256) {
          await store.record(entry)
          return onBytes(entry.bytes, entry.bytes)
        }
        if (store.pinned(model.folder, model.filename, entry.sha256)) {
          throw new ModelProvisionFailed("conflict", `it is in place with sha256 ${entry.sha256}, which another provisioning under way needs; it is not replaced while in use`)
        }
        await store.remove(model.folder, model.filename)
      } else {
        const known = entry !== undefined && !entry.placed && sameFile(entry, stat) ? entry.sha256 : undefined
        const sha256 = known ?? await hashOf(target, (n) => onBytes(n, stat.size), signal)
        await store.record({ folder: model.folder, filename: model.filename, sha256, bytes: stat.size, placed: false, mtime_ms: stat.mtimeMs })
        if (sha256 !== model.sha256) {
          throw new ModelProvisionFailed(
            "conflict",
            `it exists and is not the declared file (its sha256 is ${sha256}, declared ${model.sha256}); the agent does not replace files it did not place`
          )
        }
        return onBytes(stat.size, stat.size)
      }
    }
    if (stat === undefined && entry !== undefined) await store.forget(model.folder, model.filename)
    const bytes = await store.exclusive(`sha:${model.sha256}`, async () => {
      const bytes = await downloadModel(store, model, onBytes, signal)
      const placed = await moveIntoPlace(store.partialPath(model.sha256), target).then(() => fs.stat(target)).catch((e: unknown) => {
        store.settle(model.sha256, bytes)
        throw new ModelProvisionFailed("io", `it could not be moved into place: ${describeError(e)}`, { cause: e })
      })
      store.settle(model.sha256, null)
      await store.record({ folder: model.folder, filename: model.filename, sha256: model.sha256, bytes, placed: true, mtime_ms: placed.mtimeMs })
      return bytes
    })
    onBytes(bytes, bytes)
  })
