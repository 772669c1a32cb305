/** Just enough PNG for the fake ComfyUI: solid-colour RGB images, and reading sizes back. */
import { crc32 } from "@wes/core"
import * as zlib from "node:zlib"

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

const chunk = (type: string, data: Buffer): Buffer => {
  const head = Buffer.alloc(8)
  head.writeUInt32BE(data.length, 0)
  head.write(type, 4, "latin1")
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0)
  return Buffer.concat([head, data, crc])
}

/** Largest side actually written; bigger images are stored scaled down (the fake is not an image library). */
export const MAX_WRITTEN_SIDE = 1024

/** A PNG of `width` x `height` filled with the packed RGB `color`, with optional tEXt entries. */
export const solidPng = (
  width: number,
  height: number,
  color: number,
  text: Readonly<Record<string, string>> = {}
): Buffer<ArrayBuffer> => {
  const w = Math.max(1, Math.min(MAX_WRITTEN_SIDE, Math.round(width)))
  const h = Math.max(1, Math.min(MAX_WRITTEN_SIDE, Math.round(height)))
  const row = Buffer.alloc(1 + w * 3)
  for (let x = 0; x < w; x++) {
    row[1 + x * 3] = (color >> 16) & 0xff
    row[2 + x * 3] = (color >> 8) & 0xff
    row[3 + x * 3] = color & 0xff
  }
  const raw = Buffer.alloc(row.length * h)
  for (let y = 0; y < h; y++) row.copy(raw, y * row.length)
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(w, 0)
  ihdr.writeUInt32BE(h, 4)
  ihdr[8] = 8 // bit depth
  ihdr[9] = 2 // colour type: RGB
  const texts = Object.entries(text).map(([k, v]) => chunk("tEXt", Buffer.from(`${k}\u0000${v}`, "latin1")))
  return Buffer.concat([
    SIGNATURE,
    chunk("IHDR", ihdr),
    ...texts,
    chunk("IDAT", zlib.deflateSync(raw, { level: 1 })),
    chunk("IEND", Buffer.alloc(0))
  ])
}

/** What the fake's image loader learns from a file: its size and (for simple PNGs) its colour. */
export interface ImageInfo {
  readonly format: "PNG" | "JPEG" | "GIF" | "WEBP" | "BMP"
  readonly width: number
  readonly height: number
  readonly color: number
}

const firstPixel = (png: Buffer): number | undefined => {
  const idat: Array<Buffer> = []
  let off = 8
  while (off + 8 <= png.length) {
    const len = png.readUInt32BE(off)
    const type = png.toString("latin1", off + 4, off + 8)
    if (type === "IDAT") idat.push(png.subarray(off + 8, off + 8 + len))
    off += 12 + len
  }
  if (png[24] !== 8 || png[25] !== 2) return undefined
  const raw = zlib.inflateSync(Buffer.concat(idat))
  if (raw[0] !== 0 || raw.length < 4) return undefined
  return (raw[1]! << 16) | (raw[2]! << 8) | raw[3]!
}

/** Recognizes the image formats PIL would open; `undefined` for anything else. */
export const inspectImage = (bytes: Buffer): ImageInfo | undefined => {
  if (bytes.length >= 24 && bytes.subarray(0, 8).equals(SIGNATURE) && bytes.toString("latin1", 12, 16) === "IHDR") {
    let color = 0x808080
    try {
      color = firstPixel(bytes) ?? color
    } catch {
      // A PNG the fake cannot decode is still a PNG; it loads as grey.
    }
    return { format: "PNG", width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20), color }
  }
  const grey = { width: 512, height: 512, color: 0x808080 }
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return { format: "JPEG", ...grey }
  if (bytes.toString("latin1", 0, 4) === "GIF8") return { format: "GIF", ...grey }
  if (bytes.toString("latin1", 0, 4) === "RIFF" && bytes.toString("latin1", 8, 12) === "WEBP") return { format: "WEBP", ...grey }
  if (bytes.toString("latin1", 0, 2) === "BM") return { format: "BMP", ...grey }
  return undefined
}
