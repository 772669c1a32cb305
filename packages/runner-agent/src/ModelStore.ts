/**
 * The agent's model files (issue 34, item 3): the models directory, the record of what the agent
 * placed or found there (`ModelManifest`), its partial downloads, the disk budget over what it
 * wrote (LRU eviction of its own files, never of others, never of what a request in progress
 * needs), one-at-a-time locks per file, and the guarded HTTP client downloads go through.
 * `Provision.ts` drives it; the agent's status reports `inventory()` and `budgetBytes`.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import type { PlacedModel } from "@wes/core"
import { type Holding, planEviction } from "./ModelBudget.js"
import { formatBytes, ModelProvisionFailed } from "./ModelErrors.js"
import { type ModelHttp, modelHttp, type ModelHttpOptions } from "./ModelHttp.js"
import { loadManifest, type ManifestEntry, manifestKey } from "./ModelManifest.js"

export interface ModelStoreOptions extends ModelHttpOptions {
  /** ComfyUI's `models` directory: files go to `<modelsDir>/<folder>/<filename>`. */
  readonly modelsDir: string
  /** Most bytes the files the agent placed (and its partial downloads) may take; null: unbounded. */
  readonly budgetBytes: number | null
}

interface Partial { bytes: number; lastUsed: number; active: boolean }

export interface ModelStore {
  readonly modelsDir: string
  readonly budgetBytes: number | null
  /** The files the agent placed or found in place and verified. */
  readonly inventory: () => Array<PlacedModel>
  /** Closes the HTTP connections, aborting downloads under way (their partial files stay, to be resumed). */
  readonly close: () => Promise<void>
  // What provisioning uses:
  readonly http: ModelHttp
  readonly targetPath: (folder: string, filename: string) => string
  readonly partialPath: (sha256: string) => string
  readonly entry: (folder: string, filename: string) => ManifestEntry | undefined
  /** Records `entry` (replacing one for the same file), with a fresh last use. */
  readonly record: (entry: Omit<ManifestEntry, "last_used">) => Promise<void>
  readonly forget: (folder: string, filename: string) => Promise<void>
  /** Forgets a file the agent placed and deletes it. */
  readonly remove: (folder: string, filename: string) => Promise<void>
  /** Keeps these files (at these sha256) and their partial downloads from eviction until the returned release is called. */
  readonly pin: (files: ReadonlyArray<{ readonly folder: string; readonly filename: string; readonly sha256: string }>) => () => void
  /** Whether a provisioning under way needs this file at this sha256. */
  readonly pinned: (folder: string, filename: string, sha256: string) => boolean
  /** Holds `bytes` for the partial download of `sha256`, evicting what must go; fails when it cannot fit. */
  readonly reserve: (sha256: string, bytes: number) => Promise<void>
  /** The download of `sha256` stopped: its partial is kept (`bytes` long, for a resume) or gone (null). */
  readonly settle: (sha256: string, bytes: number | null) => void
  /** Runs `f` alone among the calls with the same `key`. */
  readonly exclusive: <A>(key: string, f: () => Promise<A>) => Promise<A>
}

const PARTIAL = /^([0-9a-f]{64})\.part$/
/** A partial download untouched this long is deleted when the store opens (nobody came back to resume it). */
const STALE_PARTIAL_MS = 7 * 24 * 3600 * 1000

const unlinkIfThere = (file: string) =>
  fs.unlink(file).catch((e: NodeJS.ErrnoException) => {
    if (e.code !== "ENOENT") throw e
  })

/** Opens the store: reads the record, forgets files gone or changed since, counts partial downloads. */
export const openModelStore = async (options: ModelStoreOptions): Promise<ModelStore> => {
  const modelsDir = path.resolve(options.modelsDir)
  const stateDir = path.join(modelsDir, ".wes-agent")
  const partialDir = path.join(stateDir, "partial")
  await fs.mkdir(partialDir, { recursive: true })
  const loaded = await loadManifest(stateDir)
  const targetPath = (folder: string, filename: string) => path.join(modelsDir, folder, filename)
  const partialPath = (sha256: string) => path.join(partialDir, `${sha256}.part`)

  const entries = new Map<string, ManifestEntry>()
  for (const e of loaded.entries) {
    const stat = await fs.stat(targetPath(e.folder, e.filename)).catch(() => undefined)
    if (stat?.isFile() === true && stat.size === e.bytes && stat.mtimeMs === e.mtime_ms) entries.set(manifestKey(e.folder, e.filename), e)
  }
  const partials = new Map<string, Partial>()
  for (const name of await fs.readdir(partialDir)) {
    const sha = PARTIAL.exec(name)?.[1]
    const stat = sha === undefined ? undefined : await fs.stat(path.join(partialDir, name))
    if (sha === undefined || stat === undefined) continue
    if (Date.now() - stat.mtimeMs > STALE_PARTIAL_MS) await unlinkIfThere(path.join(partialDir, name))
    else partials.set(sha, { bytes: stat.size, lastUsed: stat.mtimeMs, active: false })
  }
  const save = () => loaded.file.save(entries.values())
  if (entries.size !== loaded.entries.length) await save()

  let lastStamp = 0
  const stamp = () => (lastStamp = Math.max(Date.now(), lastStamp + 1))
  const pins = new Map<string, number>()
  const pinned = (key: string) => (pins.get(key) ?? 0) > 0
  const locks = new Map<string, Promise<unknown>>()

  const holdings = (except: string): Array<Holding> => [
    ...[...entries.values()].filter((e) => e.placed).map((e) => {
      const key = manifestKey(e.folder, e.filename)
      return { key, bytes: e.bytes, lastUsed: e.last_used, evictable: !pinned(`${key}@${e.sha256}`) }
    }),
    ...[...partials.entries()].filter(([sha]) => sha !== except).map(([sha, p]) => ({
      key: `sha:${sha}`,
      bytes: p.bytes,
      lastUsed: p.lastUsed,
      evictable: !p.active && !pinned(`sha:${sha}`)
    }))
  ]

  const evict = async (victims: ReadonlyArray<Holding>) => {
    const files: Array<string> = []
    for (const v of victims) {
      if (v.key.startsWith("sha:")) {
        partials.delete(v.key.slice(4))
        files.push(partialPath(v.key.slice(4)))
      } else {
        const e = entries.get(v.key)!
        entries.delete(v.key)
        files.push(targetPath(e.folder, e.filename))
      }
    }
    // The record first: a crash between the two leaves a file the agent no longer claims, never a claim without a file.
    if (victims.some((v) => !v.key.startsWith("sha:"))) await save()
    for (const f of files) await unlinkIfThere(f)
  }

  const http = modelHttp(options)
  const store: ModelStore = {
    modelsDir,
    budgetBytes: options.budgetBytes,
    inventory: () => [...entries.values()].map((e) => ({ folder: e.folder, filename: e.filename, sha256: e.sha256, bytes: e.bytes })),
    close: () => http.dispatcher.destroy(),
    http,
    targetPath,
    partialPath,
    entry: (folder, filename) => entries.get(manifestKey(folder, filename)),
    record: (entry) => {
      entries.set(manifestKey(entry.folder, entry.filename), { ...entry, last_used: stamp() })
      return save()
    },
    forget: (folder, filename) => (entries.delete(manifestKey(folder, filename)) ? save() : Promise.resolve()),
    remove: async (folder, filename) => {
      await store.forget(folder, filename)
      await unlinkIfThere(targetPath(folder, filename))
    },
    pin: (files) => {
      const keys = files.flatMap((f) => [`${manifestKey(f.folder, f.filename)}@${f.sha256}`, `sha:${f.sha256}`])
      for (const k of keys) pins.set(k, (pins.get(k) ?? 0) + 1)
      let released = false
      return () => {
        if (released) return
        released = true
        for (const k of keys) {
          const n = (pins.get(k) ?? 1) - 1
          if (n > 0) pins.set(k, n)
          else pins.delete(k)
        }
      }
    },
    pinned: (folder, filename, sha256) => pinned(`${manifestKey(folder, filename)}@${sha256}`),
    reserve: async (sha256, bytes) => {
      const current = partials.get(sha256)
      if (current !== undefined && current.active && current.bytes >= bytes) return
      const plan = planEviction(options.budgetBytes, holdings(sha256), bytes)
      if (!plan.fits) {
        throw new ModelProvisionFailed(
          "budget",
          `it does not fit the model disk budget: it needs ${formatBytes(bytes)}, the budget is ${formatBytes(options.budgetBytes ?? 0)}, ` +
            `and ${formatBytes(plan.inUse)} of it is held by files this workflow (or another being provisioned now) needs`
        )
      }
      partials.set(sha256, { bytes, lastUsed: stamp(), active: true })
      await evict(plan.evict)
    },
    settle: (sha256, bytes) => {
      if (bytes === null) partials.delete(sha256)
      else partials.set(sha256, { bytes, lastUsed: stamp(), active: false })
    },
    exclusive: <A>(key: string, f: () => Promise<A>): Promise<A> => {
      const before = locks.get(key) ?? Promise.resolve()
      const run = before.then(f)
      const settled = run.then(() => undefined, () => undefined)
      locks.set(key, settled)
      void settled.then(() => {
        if (locks.get(key) === settled) locks.delete(key)
      })
      return run
    }
  }
  return store
}
