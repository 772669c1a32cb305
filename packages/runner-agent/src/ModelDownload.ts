/**
 * Downloads a model file into its partial file (`<modelsDir>/.wes-agent/partial/<sha256>.part`)
 * and verifies it (issue 34, item 3). A partial already there is resumed: its bytes are hashed
 * again, then asked for from where they end (`Range`); a 200 instead of a 206 starts over. A cut
 * or a stall retries the same way (attempts without progress are limited, with a backoff). The
 * body streams to disk with backpressure (never held in memory), hashed as it passes, held
 * against the disk budget as it grows. A wrong sha256 deletes the partial (once starting over
 * when the bytes came from several requests) and fails with both hashes.
 */
import { createHash, type Hash } from "node:crypto"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import { pipeline } from "node:stream/promises"
import { setTimeout as sleep } from "node:timers/promises"
import type { ModelFile } from "@wes/core"
import { ModelProvisionFailed } from "./ModelErrors.js"
import { discard, openModelUrl, requestFailure } from "./ModelRequest.js"
import type { ModelStore } from "./ModelStore.js"

/** Reports `bytes` of `total` (null: unknown) so far. */
export type OnBytes = (bytes: number, total: number | null) => void

const sizeOf = (file: string) => fsp.stat(file).then((s) => s.size, (e: NodeJS.ErrnoException) => {
  if (e.code === "ENOENT") return 0
  throw e
})

/** Feeds `file`'s bytes to `hash`, reporting them. */
export const hashFile = async (file: string, hash: Hash, onBytes: (bytes: number) => void, signal?: AbortSignal): Promise<number> => {
  let seen = 0
  for await (const chunk of fs.createReadStream(file, signal === undefined ? {} : { signal }) as AsyncIterable<Buffer>) {
    hash.update(chunk)
    seen += chunk.byteLength
    onBytes(seen)
  }
  return seen
}

/** One request's worth: the partial grown by what it answered; its final size, digest, and whether it continued earlier bytes. */
const attempt = async (store: ModelStore, model: ModelFile, onBytes: OnBytes, signal: AbortSignal | undefined) => {
  const partial = store.partialPath(model.sha256)
  let hash = createHash("sha256")
  const have = await sizeOf(partial)
  if (have > 0) await hashFile(partial, hash, (n) => onBytes(n, null), signal)
  const opened = await openModelUrl(store.http, model.url, have, signal)
  if (opened.kind === "unsatisfiable") {
    if (have > 0 && opened.total === have) return { bytes: have, digest: hash.digest("hex"), resumed: true }
    await fsp.rm(partial, { force: true })
    store.settle(model.sha256, null)
    throw new ModelProvisionFailed("http_status", "the server answered HTTP 416 (range not satisfiable)", { transient: have > 0 })
  }
  let at = opened.start
  // A 200 to a Range request: the server sends the whole file, so the partial starts over.
  if (at === 0 && have > 0) hash = createHash("sha256")
  const total = opened.total
  try {
    await store.reserve(model.sha256, total ?? at)
    onBytes(at, total)
  } catch (e) {
    discard(opened.body)
    throw e
  }
  await pipeline(
    opened.body,
    async function*(source: AsyncIterable<Buffer>) {
      for await (const chunk of source) {
        at += chunk.byteLength
        if (total === null || at > total) await store.reserve(model.sha256, at)
        hash.update(chunk)
        onBytes(at, total)
        yield chunk
      }
    },
    fs.createWriteStream(partial, { flags: opened.start === 0 ? "w" : "a", flush: true }),
    signal === undefined ? {} : { signal }
  )
  if (total !== null && at < total) {
    throw new ModelProvisionFailed("unreachable", `the download ended after ${at} of ${total} bytes`, { transient: true })
  }
  return { bytes: at, digest: hash.digest("hex"), resumed: opened.start > 0 }
}

/** Leaves the verified file at its partial path; answers its size. Fails with a `ModelProvisionFailed`. */
export const downloadModel = async (store: ModelStore, model: ModelFile, onBytes: OnBytes, signal?: AbortSignal): Promise<number> => {
  const partial = store.partialPath(model.sha256)
  let stalled = 0
  let startedOver = false
  for (;;) {
    const before = await sizeOf(partial)
    try {
      const done = await attempt(store, model, onBytes, signal)
      if (done.digest === model.sha256) return done.bytes
      await fsp.rm(partial, { force: true })
      store.settle(model.sha256, null)
      if (done.resumed && !startedOver) {
        startedOver = true
        continue
      }
      throw new ModelProvisionFailed(
        "sha256_mismatch",
        `the downloaded file's sha256 is ${done.digest}, not the declared ${model.sha256}; it was deleted`
      )
    } catch (e) {
      const failure = requestFailure(store.http, e, signal)
      const now = await sizeOf(partial)
      stalled = now > before ? 0 : stalled + 1
      if (!failure.transient || stalled >= store.http.attempts) {
        if (failure.reason !== "sha256_mismatch") store.settle(model.sha256, now > 0 ? now : null)
        throw failure
      }
      await sleep(Math.min(30_000, store.http.retryDelayMs * 2 ** Math.max(0, stalled - 1)), undefined, signal === undefined ? {} : { signal })
        .catch((cause: unknown) => {
          store.settle(model.sha256, now > 0 ? now : null)
          throw new ModelProvisionFailed("cancelled", "provisioning was cancelled", { cause })
        })
    }
  }
}
