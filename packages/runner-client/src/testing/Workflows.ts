/** Ready-made API-format workflows for the fake's node catalogue (and for real ComfyUI, except `FakeSleep`). */

type Graph = Record<string, { class_type: string; inputs: Record<string, unknown> }>

/** The size, colour and batch of the `EmptyImage` a workflow starts from (64 x 64, white, one image). */
export interface ImageOptions {
  readonly width?: number
  readonly height?: number
  readonly color?: number
  readonly batch?: number
}

const emptyImage = (options: ImageOptions) => ({
  class_type: "EmptyImage",
  inputs: { width: options.width ?? 64, height: options.height ?? 64, batch_size: options.batch ?? 1, color: options.color ?? 255 }
})

/** EmptyImage -> ImageInvert -> SaveImage: validates, runs at once, writes `batch` PNGs. */
export const saveImageWorkflow = (options: ImageOptions & { readonly prefix?: string } = {}): Graph => ({
  "1": emptyImage(options),
  "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
  "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: options.prefix ?? "wes/run" } }
})

/** EmptyImage -> FakeSleep -> SaveImage: runs `seconds` in `steps` interruptible progress steps (fake only). */
export const slowWorkflow = (options: { readonly seconds: number; readonly steps?: number; readonly prefix?: string }): Graph => ({
  "1": { class_type: "EmptyImage", inputs: { width: 32, height: 32, batch_size: 1, color: 0 } },
  "2": { class_type: "FakeSleep", inputs: { seconds: options.seconds, steps: options.steps ?? 10, value: ["1", 0] } },
  "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: options.prefix ?? "wes/slow" } }
})

/** LoadImage -> ImageInvert -> SaveImage: `image` is a LoadImage value (`sub/name.png`, `name.png [output]`). */
export const loadImageWorkflow = (options: { readonly image: string; readonly prefix?: string }): Graph => ({
  "1": { class_type: "LoadImage", inputs: { image: options.image } },
  "2": { class_type: "ImageInvert", inputs: { image: ["1", 0] } },
  "3": { class_type: "SaveImage", inputs: { images: ["2", 0], filename_prefix: options.prefix ?? "wes/loaded" } }
})

/** PrimitiveString -> PreviewAny: a text-only output (history `outputs` has `text`, no files). */
export const textWorkflow = (text: string): Graph => ({
  "1": { class_type: "PrimitiveString", inputs: { value: text } },
  "2": { class_type: "PreviewAny", inputs: { source: ["1", 0] } }
})

/** EmptyImage -> SaveImageWebsocket: each image of the batch arrives as a binary frame, no file (real ComfyUI: whitelist the node). */
export const websocketImageWorkflow = (options: ImageOptions = {}): Graph => ({
  "1": emptyImage(options),
  "2": { class_type: "SaveImageWebsocket", inputs: { images: ["1", 0] } }
})

/** EmptyImage -> CreateVideo -> SaveVideo: an `.mp4` under the history's `images`, with `animated: [true]`. */
export const videoWorkflow = (options: { readonly prefix?: string; readonly frames?: number; readonly color?: number } = {}): Graph => ({
  "1": { class_type: "EmptyImage", inputs: { width: 32, height: 32, batch_size: options.frames ?? 3, color: options.color ?? 255 } },
  "2": { class_type: "CreateVideo", inputs: { images: ["1", 0], fps: 6 } },
  "3": { class_type: "SaveVideo", inputs: { video: ["2", 0], filename_prefix: options.prefix ?? "wes/video", format: "auto", codec: "auto" } }
})

/** EmptyAudio -> SaveAudio: a `.flac` under the history's `audio` (ComfyUI 0.3.64 with torchaudio; the fake). */
export const audioWorkflow = (options: { readonly prefix?: string; readonly seconds?: number } = {}): Graph => ({
  "1": { class_type: "EmptyAudio", inputs: { duration: options.seconds ?? 0.5, sample_rate: 44100, channels: 1 } },
  "2": { class_type: "SaveAudio", inputs: { audio: ["1", 0], filename_prefix: options.prefix ?? "wes/audio" } }
})
