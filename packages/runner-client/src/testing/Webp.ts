/**
 * Just enough WebP for the fake's `SaveAnimatedWEBP`: an animated container (VP8X + ANIM + one
 * ANMF per frame) whose frames are solid-colour lossless (VP8L) bitstreams. A solid colour needs
 * no pixel data in VP8L: five single-symbol prefix codes (green, red, blue, alpha, distance)
 * decode every pixel in zero bits, so a frame is 5 header bytes and about 6 bytes of codes.
 */

/** Writes bits least-significant first, as VP8L reads them. */
class BitWriter {
  private readonly bytes: Array<number> = []
  private acc = 0
  private used = 0

  write(value: number, bits: number): void {
    for (let i = 0; i < bits; i++) {
      this.acc |= ((value >>> i) & 1) << this.used
      if (++this.used === 8) {
        this.bytes.push(this.acc)
        this.acc = 0
        this.used = 0
      }
    }
  }

  finish(): Buffer {
    if (this.used > 0) this.bytes.push(this.acc)
    return Buffer.from(this.bytes)
  }
}

/** A VP8L bitstream of a `width` x `height` image of the packed RGB `color`, opaque. */
const solidVp8l = (width: number, height: number, color: number): Buffer => {
  const w = new BitWriter()
  w.write(0x2f, 8) // signature
  w.write(width - 1, 14)
  w.write(height - 1, 14)
  w.write(0, 1) // alpha unused
  w.write(0, 3) // version 0
  w.write(0, 1) // no transform
  w.write(0, 1) // no colour cache
  w.write(0, 1) // no meta prefix codes
  const literal = (symbol: number) => {
    w.write(1, 1) // simple code
    w.write(0, 1) // one symbol
    w.write(1, 1) // of 8 bits
    w.write(symbol, 8)
  }
  literal((color >> 8) & 0xff) // green
  literal((color >> 16) & 0xff) // red
  literal(color & 0xff) // blue
  literal(0xff) // alpha
  literal(0) // distance (unused)
  return w.finish()
}

const chunk = (fourcc: string, data: Buffer): Buffer => {
  const head = Buffer.alloc(8)
  head.write(fourcc, 0, "latin1")
  head.writeUInt32LE(data.length, 4)
  return Buffer.concat([head, data, data.length % 2 === 1 ? Buffer.alloc(1) : Buffer.alloc(0)])
}

const uint24 = (n: number): Buffer => {
  const b = Buffer.alloc(3)
  b.writeUIntLE(n, 0, 3)
  return b
}

/** An animated WebP of `frames` solid-colour frames, each shown `frameMs`. */
export const animatedWebp = (width: number, height: number, color: number, frames: number, frameMs: number): Buffer => {
  const w = Math.max(1, Math.min(16383, Math.round(width)))
  const h = Math.max(1, Math.min(16383, Math.round(height)))
  const vp8x = Buffer.concat([Buffer.from([0x02, 0, 0, 0]), uint24(w - 1), uint24(h - 1)]) // flag: animation
  const anim = Buffer.from([0, 0, 0, 0, 0, 0]) // background colour, loop forever
  const frame = chunk("VP8L", solidVp8l(w, h, color))
  const anmf = Array.from({ length: Math.max(1, frames) }, () =>
    chunk("ANMF", Buffer.concat([uint24(0), uint24(0), uint24(w - 1), uint24(h - 1), uint24(Math.round(frameMs)), Buffer.from([0]), frame])))
  const body = Buffer.concat([Buffer.from("WEBP", "latin1"), chunk("VP8X", vp8x), chunk("ANIM", anim), ...anmf])
  const riff = Buffer.alloc(8)
  riff.write("RIFF", 0, "latin1")
  riff.writeUInt32LE(body.length, 4)
  return Buffer.concat([riff, body])
}
