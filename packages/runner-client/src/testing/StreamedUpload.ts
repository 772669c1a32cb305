/**
 * `POST /upload/image` read as it streams (the fake's `streamUploads` option): the file part goes
 * to disk through a write stream, hashed on the way, the request paused while the disk catches
 * up, so an input of gigabytes costs the fake a few chunks of memory. Named as `saveUpload` names
 * (an existing name with the same content, by size and CRC-32, is reused, else `name (1).ext`,
 * ...), recorded with its size and CRC-32 (zlib's, native: a SHA-256 of a gigabyte cost seconds
 * of the test's CPU). Only what WES sends is handled: text fields, then one `image` file part.
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs"
import * as fsp from "node:fs/promises"
import type * as http from "node:http"
import * as path from "node:path"
import * as zlib from "node:zlib"
import * as MP from "multipasta"
import { type FileStore, isFileType, within } from "./Files.js"
import type { UploadRecord } from "./FakeOptions.js"

type Recorded = Omit<UploadRecord, "at">

/** A file's size and CRC-32. */
const checksumOf = (file: string): Promise<{ readonly size: number; readonly crc32: number }> =>
  new Promise((resolve, reject) => {
    let crc32 = 0
    let size = 0
    fs.createReadStream(file)
      .on("data", (c) => {
        const chunk = typeof c === "string" ? Buffer.from(c) : c
        crc32 = zlib.crc32(chunk, crc32)
        size += chunk.length
      })
      .on("end", () => resolve({ size, crc32 }))
      .on("error", reject)
  })

interface Received {
  readonly fields: Map<string, string>
  readonly file?: { readonly filename: string; readonly temp: string; readonly size: number; readonly crc32: number }
}

/** Parses the body, writing the `image` part to `temp`; rejects on a malformed body or a write failure. */
const receive = (req: http.IncomingMessage, temp: string): Promise<Received> =>
  new Promise((resolve, reject) => {
    const fields = new Map<string, string>()
    let file: Received["file"]
    let pending: Promise<void> = Promise.resolve()
    const parser = MP.make({
      headers: req.headers as Record<string, string>,
      onField: (info, value) => void fields.set(info.name, MP.decodeField(info, value)),
      onFile: (info) => {
        if (info.name !== "image" || file !== undefined) return () => {}
        const writer = fs.createWriteStream(temp)
        let crc32 = 0
        let size = 0
        pending = new Promise<void>((done, failed) => {
          writer.on("finish", () => {
            file = { filename: info.filename ?? "", temp, size, crc32 }
            done()
          })
          writer.on("error", failed)
        })
        return (chunk) => {
          if (chunk === null) return void writer.end()
          size += chunk.length
          crc32 = zlib.crc32(chunk, crc32)
          if (!writer.write(chunk)) {
            req.pause()
            writer.once("drain", () => req.resume())
          }
        }
      },
      onError: (e) => reject(new Error(`malformed multipart body: ${e._tag}`)),
      onDone: () => void pending.then(() => resolve({ fields, ...(file === undefined ? {} : { file }) }), reject)
    })
    req.on("data", (c: Buffer) => parser.write(c))
    req.on("end", () => parser.end())
    req.on("error", reject)
  })

/** The name a streamed upload takes in `folder`: reused when the same content is there, else the first free `name (n).ext`. */
const nameFor = async (folder: string, filename: string, content: { readonly size: number; readonly crc32: number }, overwrite: boolean): Promise<{ readonly name: string; readonly written: boolean }> => {
  if (overwrite) return { name: filename, written: true }
  const ext = path.extname(filename)
  const stem = filename.slice(0, filename.length - ext.length)
  let name = filename
  for (let i = 1; fs.existsSync(path.join(folder, name)); i++) {
    const there = await checksumOf(path.join(folder, name))
    if (there.size === content.size && there.crc32 === content.crc32) return { name, written: false }
    name = `${stem} (${i})${ext}`
  }
  return { name, written: true }
}

/** Answers a streamed `POST /upload/image` (status and JSON body), recording it. */
export const streamUpload = async (
  req: http.IncomingMessage,
  files: FileStore,
  record: (entry: Recorded) => void
): Promise<{ readonly status: number; readonly body: string }> => {
  const temp = path.join(files.dir("temp"), `upload-${crypto.randomUUID()}.part`)
  try {
    const { fields, file } = await receive(req, temp)
    const type = fields.get("type") ?? "input"
    const subfolder = fields.get("subfolder") ?? ""
    const overwrite = fields.get("overwrite") === "true" || fields.get("overwrite") === "1"
    const base = isFileType(type) ? files.dir(type) : undefined
    const folder = base === undefined ? undefined : within(base, path.normalize(subfolder === "" ? "." : subfolder))
    if (file === undefined || file.filename === "" || folder === undefined || within(folder, file.filename) === undefined) {
      record({ name: null, subfolder, type, size: file?.size ?? 0, overwrite, status: 400 })
      return { status: 400, body: "" }
    }
    await fsp.mkdir(folder, { recursive: true })
    const { name, written } = await nameFor(folder, file.filename, file, overwrite)
    if (written) await fsp.rename(file.temp, path.join(folder, name))
    record({ name, subfolder, type, size: file.size, overwrite, status: 200, crc32: file.crc32 })
    return { status: 200, body: JSON.stringify({ name, subfolder, type }) }
  } finally {
    await fsp.rm(temp, { force: true })
  }
}
