/** Ready-made API-format workflows for the fake's node catalogue (and for real ComfyUI, except `FakeSleep`). */

type Graph = Record<string, { class_type: string; inputs: Record<string, unknown> }>

/** EmptyImage -> ImageInvert -> SaveImage: validates, runs at once, writes `batch` PNGs. */
export const saveImageWorkflow = (options: {
  readonly prefix?: string
  readonly width?: number
  readonly height?: number
  readonly color?: number
  readonly batch?: number
} = {}): Graph => ({
  "1": {
    class_type: "EmptyImage",
    inputs: { width: options.width ?? 64, height: options.height ?? 64, batch_size: options.batch ?? 1, color: options.color ?? 255 }
  },
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
