/**
 * The fake's input / output / temp directories and ComfyUI's rules for naming files in them
 * (comfyui-protocol.md sections 7 and 9), plus a small multipart/form-data parser.
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"

export type FileType = "input" | "output" | "temp"

export const isFileType = (s: string): s is FileType => s === "input" || s === "output" || s === "temp"

/** `folder_paths.annotated_filepath`: a trailing `[input]`, `[output]` or `[temp]` picks the base directory. */
export const annotated = (name: string): { readonly name: string; readonly type: FileType | undefined } => {
  if (name.endsWith("[output]")) return { name: name.slice(0, -9), type: "output" }
  if (name.endsWith("[input]")) return { name: name.slice(0, -8), type: "input" }
  if (name.endsWith("[temp]")) return { name: name.slice(0, -7), type: "temp" }
  return { name, type: undefined }
}

/** The absolute path of `parts` joined onto `base`, or undefined when it leaves `base`. */
export const within = (base: string, ...parts: ReadonlyArray<string>): string | undefined => {
  const full = path.resolve(base, ...parts)
  const rel = path.relative(base, full)
  return rel.startsWith("..") || path.isAbsolute(rel) ? undefined : full
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".webp": "image/webp",
  ".gif": "image/gif",
  ".bmp": "image/bmp",
  ".tif": "image/tiff",
  ".tiff": "image/tiff",
  ".mp4": "video/mp4",
  ".webm": "video/webm",
  ".mov": "video/quicktime",
  ".mkv": "video/x-matroska",
  ".flac": "audio/flac",
  ".m4a": "audio/mp4",
  ".wav": "audio/x-wav",
  ".mp3": "audio/mpeg",
  ".ogg": "audio/ogg",
  ".opus": "audio/ogg",
  ".json": "application/json",
  ".txt": "text/plain",
  ".glb": "model/gltf-binary",
  ".safetensors": "application/octet-stream"
}

/**
 * Python 3.11's own `mimetypes` table where it differs from a machine's `/etc/mime.types` (absent
 * from slim container images): these extensions get no type (`application/octet-stream`) or another.
 */
const BUILTIN_ONLY: Readonly<Record<string, string | undefined>> = {
  ".flac": undefined,
  ".mkv": undefined,
  ".ogg": undefined,
  ".m4a": undefined,
  ".glb": undefined,
  ".opus": "audio/opus"
}

/**
 * Which table Python's `mimetypes` has on the runner's machine: `system` (with `/etc/mime.types`)
 * or `builtin` (Python's own, as in a slim container image). ComfyUI adds `image/webp` to both.
 */
export type MimeTypes = "system" | "builtin"

/** Types a browser would render or run: `/view` serves them as downloads. */
const DANGEROUS = new Set([".html", ".htm", ".js", ".mjs", ".css", ".xhtml", ".svg", ".xml"])

/** What `/view` answers for a file: Content-Type and Content-Disposition. */
export const viewHeaders = (filename: string, mimeTypes: MimeTypes = "system"): Record<string, string> => {
  const ext = path.extname(filename).toLowerCase()
  // aiohttp writes a header's value as UTF-8 bytes (node sends header strings as latin1).
  const safe = Buffer.from(filename.replace(/\\/g, "\\\\").replace(/"/g, "\\\""), "utf8").toString("latin1")
  if (DANGEROUS.has(ext)) {
    return {
      "content-type": "application/octet-stream",
      "content-disposition": `attachment; filename="${safe}"`,
      "x-content-type-options": "nosniff",
      "cache-control": "no-store"
    }
  }
  return {
    "content-type": (mimeTypes === "builtin" && ext in BUILTIN_ONLY ? BUILTIN_ONLY[ext] : CONTENT_TYPES[ext]) ?? "application/octet-stream",
    "content-disposition": `filename="${safe}"`,
    "x-content-type-options": "nosniff"
  }
}

export const sha256 = (bytes: Uint8Array): string => crypto.createHash("sha256").update(bytes).digest("hex")

const exists = (p: string): Promise<boolean> => fs.stat(p).then(() => true, () => false)

/** The three directories of a ComfyUI install, under one root. */
export class FileStore {
  /**
   * The next counter of each folder + name, and the folder's mtime when it was known: a save
   * lists the folder again only if something else changed it since. (ComfyUI lists it on every
   * save; over a long benchmark the fake's listing of thousands of files was most of its CPU.)
   */
  private readonly counters = new Map<string, { readonly mtime: bigint; readonly next: number }>()

  private constructor(readonly root: string, private readonly owned: boolean) {}

  /** Uses `rootDir` (created if missing) or a fresh temporary directory that `remove` deletes. */
  static async create(rootDir: string | undefined): Promise<FileStore> {
    const root = rootDir ?? await fs.mkdtemp(path.join(os.tmpdir(), "wes-fake-comfyui-"))
    const store = new FileStore(path.resolve(root), rootDir === undefined)
    for (const type of ["input", "output", "temp"] as const) await fs.mkdir(store.dir(type), { recursive: true })
    return store
  }

  dir(type: FileType): string {
    return path.join(this.root, type)
  }

  /** Whether a LoadImage-style value (`sub/name.png [output]`) names an existing file. */
  async existsAnnotated(value: string, defaultType: FileType = "input"): Promise<string | undefined> {
    const a = annotated(value)
    const file = within(this.dir(a.type ?? defaultType), a.name)
    if (file === undefined) return undefined
    const stat = await fs.stat(file).catch(() => undefined)
    return stat?.isFile() ? file : undefined
  }

  /**
   * `POST /upload/image`'s naming: unless `overwrite`, an existing name with the same content is
   * reused and one with different content becomes `name (1).ext`, `name (2).ext`, ...
   * Answers undefined when the target leaves the type directory.
   */
  async saveUpload(
    type: FileType,
    subfolder: string,
    filename: string,
    content: Buffer,
    overwrite: boolean
  ): Promise<{ readonly name: string; readonly written: boolean } | undefined> {
    const base = this.dir(type)
    const folder = within(base, path.normalize(subfolder === "" ? "." : subfolder))
    if (folder === undefined || within(base, folder, filename) === undefined) return undefined
    await fs.mkdir(folder, { recursive: true })
    const ext = path.extname(filename)
    const stem = filename.slice(0, filename.length - ext.length)
    let name = filename
    if (!overwrite) {
      const hash = sha256(content)
      for (let i = 1; await exists(path.join(folder, name)); i++) {
        if (sha256(await fs.readFile(path.join(folder, name))) === hash) return { name, written: false }
        name = `${stem} (${i})${ext}`
      }
    }
    await fs.writeFile(path.join(folder, name), content)
    return { name, written: true }
  }

  /**
   * `folder_paths.get_save_image_path`: the sub folder and base name of a `filename_prefix`, and
   * the next counter (one past the highest `<name>_<digits>_` file already there).
   */
  async saveImagePath(
    type: FileType,
    prefix: string
  ): Promise<{ readonly folder: string; readonly subfolder: string; readonly filename: string; readonly counter: number }> {
    const base = this.dir(type)
    const norm = path.posix.normalize(prefix)
    const subfolder = path.posix.dirname(norm) === "." ? "" : path.posix.dirname(norm)
    const filename = path.posix.basename(norm)
    const folder = within(base, subfolder === "" ? "." : subfolder)
    if (folder === undefined) {
      throw new Error(
        `**** ERROR: Saving image outside the output folder is not allowed.\n full_output_folder: ${path.join(base, subfolder)}\n output_dir: ${base}`
      )
    }
    await fs.mkdir(folder, { recursive: true })
    const known = this.counters.get(`${folder}\0${filename}`)
    if (known !== undefined && known.mtime === (await fs.stat(folder, { bigint: true })).mtimeNs) {
      return { folder, subfolder, filename, counter: known.next }
    }
    let counter = 1
    const start = `${filename}_`
    for (const f of await fs.readdir(folder)) {
      if (!f.startsWith(start)) continue
      const digits = Number.parseInt(f.slice(start.length).split("_")[0] ?? "", 10)
      if (Number.isFinite(digits) && digits + 1 > counter) counter = digits + 1
    }
    return { folder, subfolder, filename, counter }
  }

  /** After a save wrote counters up to `next - 1` into `target`'s folder: the next one starts there. */
  async saved(target: { readonly folder: string; readonly filename: string }, next: number): Promise<void> {
    const { mtimeNs } = await fs.stat(target.folder, { bigint: true })
    this.counters.set(`${target.folder}\0${target.filename}`, { mtime: mtimeNs, next })
  }

  /** Deletes every temp file (ComfyUI's `cleanup_temp` at start-up). */
  async wipeTemp(): Promise<void> {
    await fs.rm(this.dir("temp"), { recursive: true, force: true })
    await fs.mkdir(this.dir("temp"), { recursive: true })
  }

  /** Lists files (relative paths, `/`-separated) under a type directory. */
  async list(type: FileType): Promise<Array<string>> {
    const out: Array<string> = []
    const walk = async (dir: string, prefix: string): Promise<void> => {
      for (const e of await fs.readdir(dir, { withFileTypes: true })) {
        if (e.isDirectory()) await walk(path.join(dir, e.name), `${prefix}${e.name}/`)
        else if (e.isFile()) out.push(`${prefix}${e.name}`)
      }
    }
    await walk(this.dir(type), "")
    return out.sort()
  }

  /** Deletes the root when the store created it. */
  async remove(): Promise<void> {
    if (this.owned) await fs.rm(this.root, { recursive: true, force: true })
  }
}

/** One part of a multipart/form-data body. */
export interface FormPart {
  readonly name: string
  readonly filename: string | undefined
  readonly contentType: string | undefined
  readonly data: Buffer
}

const param = (header: string, key: string): string | undefined => {
  const re = new RegExp(`(?:^|;)\\s*${key}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;]*))`, "i")
  const m = re.exec(header)
  if (m === null) return undefined
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2]!.trim()
}

/** Splits a multipart/form-data body; undefined when it is not one. */
export const parseMultipart = (contentType: string, body: Buffer): Array<FormPart> | undefined => {
  if (!/^multipart\/form-data/i.test(contentType)) return undefined
  const boundary = param(contentType, "boundary")
  if (boundary === undefined || boundary === "") return undefined
  const delimiter = Buffer.from(`--${boundary}`)
  const next = Buffer.from(`\r\n--${boundary}`)
  let pos = body.indexOf(delimiter)
  if (pos < 0) return undefined
  pos += delimiter.length
  const parts: Array<FormPart> = []
  while (pos < body.length && body.toString("latin1", pos, pos + 2) !== "--") {
    pos += 2 // CRLF after the delimiter
    const headerEnd = body.indexOf("\r\n\r\n", pos)
    if (headerEnd < 0) return undefined
    const headers = new Map<string, string>()
    for (const line of body.toString("utf8", pos, headerEnd).split("\r\n")) {
      const i = line.indexOf(":")
      if (i > 0) headers.set(line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim())
    }
    const end = body.indexOf(next, headerEnd + 4)
    if (end < 0) return undefined
    const disposition = headers.get("content-disposition") ?? ""
    const star = param(disposition, "filename\\*")
    const filename = star !== undefined
      ? decodeURIComponent(star.replace(/^[^']*'[^']*'/, ""))
      : param(disposition, "filename")
    parts.push({
      name: param(disposition, "name") ?? "",
      filename,
      contentType: headers.get("content-type"),
      data: body.subarray(headerEnd + 4, end)
    })
    pos = end + next.length
  }
  return parts
}
