/** Byte helpers every package uses: one CRC-32 and one concatenation. */

const CRC_TABLE = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

/** CRC-32 (IEEE 802.3, as in PNG, zip and gzip) of bytes, or of an ASCII string's character codes. */
export const crc32 = (input: Uint8Array | string): number => {
  let crc = 0xffffffff
  if (typeof input === "string") {
    for (let i = 0; i < input.length; i++) crc = CRC_TABLE[(crc ^ input.charCodeAt(i)) & 0xff]! ^ (crc >>> 8)
  } else {
    for (const b of input) crc = CRC_TABLE[(crc ^ b) & 0xff]! ^ (crc >>> 8)
  }
  return (crc ^ 0xffffffff) >>> 0
}

/** The chunks as one array; a single chunk is returned as it is. */
export const concatBytes = (chunks: ReadonlyArray<Uint8Array>): Uint8Array => {
  if (chunks.length === 1) return chunks[0]!
  let size = 0
  for (const c of chunks) size += c.length
  const out = new Uint8Array(size)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.length
  }
  return out
}
