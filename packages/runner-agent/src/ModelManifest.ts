/**
 * The agent's record of the model files it knows (issue 34, item 3): which ones under the models
 * directory it placed (so it may evict or replace them) and which it found in place and verified
 * (never touched), with sha256, size, mtime and last use. Kept in `<modelsDir>/.wes-agent/manifest.json`,
 * written whole to a temporary file, fsynced and renamed over the old one: a crash leaves the old
 * record or the new one, never half of one. Writes are serialised, each writing the latest state.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import * as Schema from "effect/Schema"

const Entry = Schema.Struct({
  folder: Schema.String,
  filename: Schema.String,
  sha256: Schema.String,
  bytes: Schema.Finite,
  /** True: WES placed it (evictable, replaceable). False: found in place and verified; never deleted. */
  placed: Schema.Boolean,
  /** When a provisioning last needed it (ms since the epoch; strictly increasing): the LRU order. */
  last_used: Schema.Finite,
  /** The file's mtime when recorded: a file changed since is not the recorded one any more. */
  mtime_ms: Schema.Finite
})
export interface ManifestEntry extends Schema.Schema.Type<typeof Entry> {}

const Manifest = Schema.Struct({ version: Schema.Literal(1), files: Schema.Array(Entry) })
const decode = Schema.decodeUnknownSync(Manifest)

export const manifestKey = (folder: string, filename: string): string => `${folder}/${filename}`

export interface ManifestFile {
  readonly path: string
  /** Writes `entries` as the record (after any write already under way). */
  readonly save: (entries: Iterable<ManifestEntry>) => Promise<void>
}

/**
 * Reads the record in `stateDir` (none: empty). An unreadable record is moved aside
 * (`manifest.json.corrupt-<time>`) and the agent starts from an empty one: the files it listed
 * are then treated as files it did not place, so nothing is deleted on a guess.
 */
export const loadManifest = async (stateDir: string): Promise<{ readonly file: ManifestFile; readonly entries: ReadonlyArray<ManifestEntry> }> => {
  const file = path.join(stateDir, "manifest.json")
  let entries: ReadonlyArray<ManifestEntry> = []
  try {
    const text = await fs.readFile(file, "utf8")
    try {
      entries = decode(JSON.parse(text)).files
    } catch {
      await fs.rename(file, `${file}.corrupt-${Date.now()}`)
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e
  }
  let chain: Promise<void> = Promise.resolve()
  const write = async (list: ReadonlyArray<ManifestEntry>) => {
    const tmp = `${file}.tmp`
    const handle = await fs.open(tmp, "w")
    try {
      await handle.writeFile(JSON.stringify({ version: 1, files: list }, null, 1))
      await handle.sync()
    } finally {
      await handle.close()
    }
    await fs.rename(tmp, file)
  }
  const save = (list: Iterable<ManifestEntry>) => {
    const snapshot = [...list]
    const next = chain.then(() => write(snapshot))
    // The chain goes on after a failed write; the failure is the caller's (it awaits `next`).
    chain = next.catch(() => undefined)
    return next
  }
  return { file: { path: file, save }, entries }
}
