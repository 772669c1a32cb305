/**
 * The fake's video and audio nodes, as ComfyUI 0.3.64 has them (comfy_extras/nodes_video.py,
 * nodes_audio.py): `CreateVideo` -> `SaveVideo` writes an `.mp4` listed under the history's
 * `images` with `animated: [true]`; `EmptyAudio` -> `SaveAudio` writes a `.flac` listed under
 * `audio`. The files are containers without media (an MP4 `ftyp` box, a FLAC `STREAMINFO` of no
 * samples): their signatures are what clients read; the fake is not an encoder.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { combo, image, int, pyTypeOf, saveTarget } from "./NodeHelpers.js"
import type { FakeImage, NodeDef } from "./NodeTypes.js"
import { PyError, pyStr } from "./Python.js"

interface FakeVideo {
  readonly kind: "VIDEO"
  readonly frames: FakeImage
  readonly fps: number
}

interface FakeAudio {
  readonly kind: "AUDIO"
  readonly channels: number
  readonly sampleRate: number
  readonly samples: number
}

const kindOf = (v: unknown): unknown => typeof v === "object" && v !== null ? (v as { kind?: unknown }).kind : undefined

const box = (type: string, body: Buffer): Buffer => {
  const head = Buffer.alloc(8)
  head.writeUInt32BE(8 + body.length, 0)
  head.write(type, 4, "latin1")
  return Buffer.concat([head, body])
}

/** An MP4 as libavformat starts one (`ftyp` isom/512, then the brands), with an empty `mdat`. */
const emptyMp4 = (): Buffer =>
  Buffer.concat([box("ftyp", Buffer.from("isom\u0000\u0000\u0002\u0000isomiso2avc1mp41", "latin1")), box("free", Buffer.alloc(0)), box("mdat", Buffer.alloc(0))])

/** A FLAC stream of no samples: the signature and its one (last) `STREAMINFO` block. */
const emptyFlac = (audio: FakeAudio): Buffer => {
  const info = Buffer.alloc(34)
  info.writeUInt16BE(4096, 0)
  info.writeUInt16BE(4096, 2)
  // Sample rate (20 bits), channels - 1 (3), bits per sample - 1 (5), total samples (36): 0.
  info.writeBigUInt64BE((BigInt(audio.sampleRate) << 44n) | (BigInt(audio.channels - 1) << 41n) | (15n << 36n), 10)
  return Buffer.concat([Buffer.from("fLaC", "latin1"), Buffer.from([0x80, 0x00, 0x00, 0x22]), info])
}

const hidden = { prompt: "PROMPT", extra_pnginfo: "EXTRA_PNGINFO" }

export const MEDIA_NODES: ReadonlyArray<NodeDef> = [
  {
    name: "CreateVideo",
    displayName: "Create Video",
    category: "image/video",
    description: "Create a video from images.",
    pythonModule: "comfy_extras.nodes_video",
    required: { images: { type: "IMAGE" }, fps: { type: "FLOAT", default: 30.0, min: 1.0, max: 120.0, step: 1.0 } },
    optional: { audio: { type: "AUDIO" } },
    outputs: ["VIDEO"],
    outputNode: false,
    run: (i) => Promise.resolve({ outputs: [{ kind: "VIDEO", frames: image(i.images), fps: Number(i.fps) } satisfies FakeVideo] })
  },
  {
    name: "SaveVideo",
    displayName: "Save Video",
    category: "image/video",
    description: "Saves the input images to your ComfyUI output directory.",
    pythonModule: "comfy_extras.nodes_video",
    required: {
      video: { type: "VIDEO" },
      filename_prefix: { type: "STRING", default: "video/ComfyUI" },
      format: combo(["auto", "mp4"]),
      codec: combo(["auto", "h264"])
    },
    hidden,
    outputs: [],
    outputNode: true,
    run: async (i, ctx) => {
      if (kindOf(i.video) !== "VIDEO") throw new PyError("AttributeError", `'${pyTypeOf(i.video)}' object has no attribute 'get_dimensions'`)
      const video = i.video as FakeVideo
      const target = await saveTarget(ctx, "output", pyStr(i.filename_prefix), video.frames)
      const file = `${target.filename}_${String(target.counter).padStart(5, "0")}_.mp4`
      await fs.writeFile(path.join(target.folder, file), emptyMp4())
      await ctx.files.saved(target, target.counter + 1)
      return { outputs: [], ui: { images: [{ filename: file, subfolder: target.subfolder, type: "output" }], animated: [true] } }
    }
  },
  {
    name: "EmptyAudio",
    displayName: "Empty Audio",
    category: "audio",
    description: "",
    pythonModule: "comfy_extras.nodes_audio",
    required: {
      duration: { type: "FLOAT", default: 60.0, min: 0.0, max: 2 ** 64 - 1, step: 0.01 },
      sample_rate: { type: "INT", default: 44100 },
      channels: int(2, 1, 2)
    },
    outputs: ["AUDIO"],
    outputNode: false,
    run: (i) => {
      const sampleRate = Number(i.sample_rate)
      const audio: FakeAudio = { kind: "AUDIO", channels: Number(i.channels), sampleRate, samples: Math.round(Number(i.duration) * sampleRate) }
      return Promise.resolve({ outputs: [audio] })
    }
  },
  {
    name: "SaveAudio",
    displayName: "Save Audio (FLAC)",
    category: "audio",
    description: "",
    pythonModule: "comfy_extras.nodes_audio",
    required: { audio: { type: "AUDIO" }, filename_prefix: { type: "STRING", default: "audio/ComfyUI" } },
    hidden,
    outputs: [],
    outputNode: true,
    run: async (i, ctx) => {
      if (kindOf(i.audio) !== "AUDIO") throw new PyError("TypeError", `'${pyTypeOf(i.audio)}' object is not subscriptable`)
      const audio = i.audio as FakeAudio
      const target = await saveTarget(ctx, "output", pyStr(i.filename_prefix), { width: 0, height: 0 })
      const file = `${target.filename.replaceAll("%batch_num%", "0")}_${String(target.counter).padStart(5, "0")}_.flac`
      await fs.writeFile(path.join(target.folder, file), emptyFlac(audio))
      await ctx.files.saved(target, target.counter + 1)
      return { outputs: [], ui: { audio: [{ filename: file, subfolder: target.subfolder, type: "output" }] } }
    }
  }
]
