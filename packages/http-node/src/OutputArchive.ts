/**
 * All of a workflow's outputs as one ZIP archive, streamed: yazl writes the archive as each
 * output's bytes are read from the store, one output at a time (an entry is opened only when the
 * archive reaches it), so no file is ever held whole. Entries are stored, not deflated (outputs
 * are compressed media already), which also lets yazl tell the archive's size in advance (the
 * response's Content-Length). ZIP64 where sizes or offsets need it.
 */
import * as NodeStream from "@effect/platform-node/NodeStream"
import { type OutputArchive, StorageError, type StoredOutput } from "@wes/core"
import * as DateTime from "effect/DateTime"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { PassThrough, Readable } from "node:stream"
import { ZipFile } from "yazl"

/** What an entry is named from. */
type Named = Pick<StoredOutput["output"], "subfolder" | "filename">

/** A path inside the archive: `subfolder/filename`, with no empty, `.` or `..` segment. */
const pathOf = (o: Named): string => {
  const clean = (s: string) => s.split(/[\\/]+/).filter((seg) => seg !== "" && seg !== "." && seg !== "..")
  const name = clean(o.filename).join("_")
  return [...clean(o.subfolder), name === "" ? "file" : name].join("/")
}

/**
 * Unique paths for `outputs`, in order: a path seen before gets ` (2)`, ` (3)`, ... before its
 * extension (a temp preview and a saved file may share a name). Case-insensitively, as on the
 * file systems archives are unpacked onto.
 */
export const archivePaths = (outputs: ReadonlyArray<Named>): ReadonlyArray<string> => {
  const taken = new Set<string>()
  return outputs.map((o) => {
    const path = pathOf(o)
    const dot = path.lastIndexOf(".")
    const [stem, ext] = dot > path.lastIndexOf("/") + 1 ? [path.slice(0, dot), path.slice(dot)] : [path, ""]
    let candidate = path
    for (let n = 2; taken.has(candidate.toLowerCase()); n++) candidate = `${stem} (${n})${ext}`
    taken.add(candidate.toLowerCase())
    return candidate
  })
}

/** The archive's file name: the workflow's name (or id when it has none usable), `-outputs.zip`. */
export const archiveName = (workflow: Pick<OutputArchive["workflow"], "id" | "name">): string => {
  // eslint-disable-next-line no-control-regex
  const name = workflow.name.replace(/[\u0000-\u001f\u007f/\\:*?"<>|]+/g, "_").trim().slice(0, 150)
  return `${name === "" || /^[._]+$/.test(name) ? workflow.id : name}-outputs.zip`
}

interface Entry {
  readonly stored: StoredOutput
  readonly path: string
  readonly options: { readonly size: number; readonly compress: false; readonly mtime: Date }
}

const entriesOf = (archive: OutputArchive): ReadonlyArray<Entry> => {
  const paths = archivePaths(archive.outputs.map((o) => o.output))
  return archive.outputs.map((stored, i) => ({
    stored,
    path: paths[i]!,
    options: { size: stored.output.size, compress: false, mtime: DateTime.toDateUtc(stored.output.created_at) }
  }))
}

/** The archive's size, as yazl computes it from the entries' names and sizes, without reading any. */
const sizeOf = (entries: ReadonlyArray<Entry>): number => {
  const zip = new ZipFile()
  // Never answered: yazl asks for the first entry's bytes at once, and only sizes are wanted.
  for (const e of entries) zip.addReadStreamLazy(e.path, e.options, () => {})
  let size = -1
  // @types/yazl declares the callback without its argument, the total size (-1 when unknown).
  const end = zip.end.bind(zip) as (options: undefined, sized: (total: number) => void) => void
  end(undefined, (total) => { size = total })
  return size
}

/** The archive's bytes, written as the stream is read. */
const bytesOf = (entries: ReadonlyArray<Entry>): Stream.Stream<Uint8Array, StorageError> =>
  Stream.unwrap(Effect.sync(() => {
    const zip = new ZipFile()
    const output = zip.outputStream as PassThrough
    const fail = (e: unknown) => output.destroy(e instanceof Error ? e : new Error(String(e)))
    zip.on("error", fail)
    let reading: Readable | undefined
    for (const e of entries) {
      zip.addReadStreamLazy(e.path, e.options, (cb) => {
        // The output's bytes, read from the store only now.
        reading = NodeStream.toReadableNever(Stream.unwrap(Effect.map(e.stored.read(), (blob) => blob.stream)))
        reading.on("error", fail)
        cb(null, reading)
      })
    }
    zip.end()
    return NodeStream.fromReadable<Uint8Array, StorageError>({
      evaluate: () => output,
      onError: (cause) => new StorageError({ message: `the outputs archive failed: ${cause instanceof Error ? cause.message : String(cause)}`, cause })
    }).pipe(Stream.ensuring(Effect.sync(() => reading?.destroy())))
  }))

/**
 * The archive of `archive`'s outputs: its size in bytes, and its bytes, written as they are read.
 * A store's error while reading an output fails the stream (the response is cut short); a stream
 * that stops early (the client went away) stops the output being read.
 */
export const zipArchive = (archive: OutputArchive): { readonly size: number; readonly stream: Stream.Stream<Uint8Array, StorageError> } => {
  const entries = entriesOf(archive)
  return { size: sizeOf(entries), stream: bytesOf(entries) }
}
