/**
 * The fake's node catalogue: model-free ComfyUI nodes (comfyui-protocol.md section 10) with their
 * real inputs and bounds (video and audio in MediaNodes.ts), plus `FakeSleep`, a fake-only node
 * that reports progress while it waits.
 */
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { type FileStore, sha256 } from "./Files.js"
import { LARGE_OUTPUT_NODES } from "./LargeOutputs.js"
import { MEDIA_NODES } from "./MediaNodes.js"
import { combo, image, int, isImage, isMask, mask, MAX_SIZE, saveTarget } from "./NodeHelpers.js"
import type { FakeImage, FakeMask, InputSpec, NodeContext, NodeDef, NodeResult } from "./NodeTypes.js"
import { inspectImage, solidPng } from "./Png.js"
import { animatedWebp } from "./Webp.js"
import { PyError, pyStr } from "./Python.js"

const MAX_RESOLUTION = 16384

/** How a fake value looks when printed (e.g. by PreviewAny or in `current_inputs`). */
export const describeValue = (v: unknown): string => {
  if (isImage(v)) return `<IMAGE ${v.batch}x${v.height}x${v.width}x3 color=#${v.color.toString(16).padStart(6, "0")}>`
  if (isMask(v)) return `<MASK ${v.batch}x${v.height}x${v.width} value=${v.value}>`
  return pyStr(v)
}

const UPSCALE_METHODS = ["nearest-exact", "bilinear", "area", "bicubic", "lanczos"]

const pngText = (ctx: NodeContext): Record<string, string> => {
  const text: Record<string, string> = { prompt: JSON.stringify(ctx.prompt) }
  if (typeof ctx.extraPngInfo === "object" && ctx.extraPngInfo !== null) {
    for (const [k, v] of Object.entries(ctx.extraPngInfo)) text[k] = JSON.stringify(v)
  }
  return text
}

const saveImages = async (
  img: FakeImage,
  prefix: string,
  type: "output" | "temp",
  ctx: NodeContext
): Promise<NodeResult> => {
  const target = await saveTarget(ctx, type, prefix, img)
  const images: Array<{ filename: string; subfolder: string; type: string }> = []
  let counter = target.counter
  for (let b = 0; b < img.batch; b++) {
    const file = `${target.filename.replaceAll("%batch_num%", String(b))}_${String(counter).padStart(5, "0")}_.png`
    await fs.writeFile(path.join(target.folder, file), solidPng(img.width, img.height, img.color, pngText(ctx)))
    images.push({ filename: file, subfolder: target.subfolder, type })
    counter++
  }
  await ctx.files.saved(target, counter)
  return { outputs: [], ui: { images } }
}

const randomLetters = (n: number): string =>
  Array.from({ length: n }, () => "abcdefghijklmnopqrstupvxyz"[Math.floor(Math.random() * 26)]).join("")

const topLevelInputFiles = async (files: FileStore): Promise<ReadonlyArray<string>> => {
  const entries = await fs.readdir(files.dir("input"), { withFileTypes: true })
  return entries.filter((e) => e.isFile()).map((e) => e.name).sort()
}

const imageNode = (
  name: string,
  displayName: string,
  required: Record<string, InputSpec>,
  run: (inputs: Readonly<Record<string, unknown>>) => FakeImage
): NodeDef => ({
  name,
  displayName,
  category: "image",
  description: "",
  pythonModule: "nodes",
  required,
  outputs: ["IMAGE"],
  outputNode: false,
  run: (inputs) => Promise.resolve({ outputs: [run(inputs)] })
})

const primitive = (name: string, type: "STRING" | "INT" | "FLOAT" | "BOOLEAN", spec: InputSpec): NodeDef => ({
  name,
  displayName: name.replace("Primitive", ""),
  category: "utils/primitive",
  description: "",
  pythonModule: "comfy_extras.nodes_primitive",
  required: { value: spec },
  outputs: [type],
  outputNode: false,
  run: (inputs) => Promise.resolve({ outputs: [inputs.value] })
})

const CATALOGUE: ReadonlyArray<NodeDef> = [
  imageNode("EmptyImage", "EmptyImage", {
    width: int(512, 1, MAX_RESOLUTION),
    height: int(512, 1, MAX_RESOLUTION),
    batch_size: int(1, 1, 4096),
    color: int(0, 0, 0xffffff, { display: "color" })
  }, (i) => ({
    kind: "IMAGE",
    width: Number(i.width),
    height: Number(i.height),
    batch: Number(i.batch_size),
    color: Number(i.color)
  })),
  imageNode("ImageInvert", "Invert Image", { image: { type: "IMAGE" } }, (i) => {
    const img = image(i.image)
    return { ...img, color: img.color ^ 0xffffff }
  }),
  imageNode("ImageScale", "Upscale Image", {
    image: { type: "IMAGE" },
    upscale_method: combo(UPSCALE_METHODS),
    width: int(512, 0, MAX_RESOLUTION),
    height: int(512, 0, MAX_RESOLUTION),
    crop: combo(["disabled", "center"])
  }, (i) => {
    const img = image(i.image)
    let w = Number(i.width)
    let h = Number(i.height)
    if (w === 0 && h === 0) return img
    if (w === 0) w = Math.max(1, Math.round(img.width * h / img.height))
    if (h === 0) h = Math.max(1, Math.round(img.height * w / img.width))
    return { ...img, width: w, height: h }
  }),
  imageNode("MaskToImage", "Convert Mask to Image", { mask: { type: "MASK" } }, (i) => {
    const m = mask(i.mask)
    const grey = Math.round(Math.min(1, Math.max(0, m.value)) * 255)
    return { kind: "IMAGE", width: m.width, height: m.height, batch: m.batch, color: (grey << 16) | (grey << 8) | grey }
  }),
  {
    name: "ImageBlur",
    displayName: "Image Blur",
    category: "image/postprocessing",
    description: "",
    pythonModule: "comfy_extras.nodes_post_processing",
    required: {
      image: { type: "IMAGE" },
      blur_radius: int(1, 1, 31),
      sigma: { type: "FLOAT", default: 1.0, min: 0.1, max: 10.0, step: 0.1 }
    },
    outputs: ["IMAGE"],
    outputNode: false,
    // A solid colour stays itself; the time is what a blur costs: 768x768 at radius 31 takes ~280 ms.
    run: async (i, ctx) => {
      const img = image(i.image)
      await ctx.sleep((img.width * img.height * img.batch * Number(i.blur_radius)) / 65536)
      return { outputs: [img] }
    }
  },
  {
    name: "SolidMask",
    displayName: "SolidMask",
    category: "mask",
    description: "",
    pythonModule: "comfy_extras.nodes_mask",
    required: {
      value: { type: "FLOAT", default: 1.0, min: 0.0, max: 1.0, step: 0.01 },
      width: int(512, 1, MAX_RESOLUTION),
      height: int(512, 1, MAX_RESOLUTION)
    },
    outputs: ["MASK"],
    outputNode: false,
    run: (i) =>
      Promise.resolve({
        outputs: [{ kind: "MASK", width: Number(i.width), height: Number(i.height), batch: 1, value: Number(i.value) }]
      })
  },
  {
    name: "LoadImage",
    displayName: "Load Image",
    category: "image",
    description: "",
    pythonModule: "nodes",
    required: { image: { type: "COMBO", options: topLevelInputFiles, extra: { image_upload: true } } },
    outputs: ["IMAGE", "MASK"],
    outputNode: false,
    validate: {
      inputs: ["image"],
      check: async (v, files) =>
        await files.existsAnnotated(pyStr(v.image)) !== undefined ? true : `Invalid image file: ${pyStr(v.image)}`
    },
    isChanged: async (v, files) => {
      const file = await files.existsAnnotated(pyStr(v.image))
      return file === undefined ? null : sha256(await fs.readFile(file))
    },
    run: async (i, ctx) => {
      const file = await ctx.files.existsAnnotated(pyStr(i.image))
      if (file === undefined) {
        throw new PyError("FileNotFoundError", `[Errno 2] No such file or directory: '${pyStr(i.image)}'`)
      }
      const info = inspectImage(await fs.readFile(file))
      if (info === undefined) throw new PyError("PIL.UnidentifiedImageError", `cannot identify image file '${file}'`)
      const img: FakeImage = { kind: "IMAGE", width: info.width, height: info.height, batch: 1, color: info.color }
      const m: FakeMask = { kind: "MASK", width: info.width, height: info.height, batch: 1, value: 0 }
      return { outputs: [img, m] }
    }
  },
  {
    name: "SaveImage",
    displayName: "Save Image",
    category: "image",
    description: "Saves the input images to your ComfyUI output directory.",
    pythonModule: "nodes",
    required: { images: { type: "IMAGE" }, filename_prefix: { type: "STRING", default: "ComfyUI" } },
    hidden: { prompt: "PROMPT", extra_pnginfo: "EXTRA_PNGINFO" },
    outputs: [],
    outputNode: true,
    run: (i, ctx) => saveImages(image(i.images), pyStr(i.filename_prefix), "output", ctx)
  },
  {
    name: "PreviewImage",
    displayName: "Preview Image",
    category: "image",
    description: "Saves the input images to your ComfyUI output directory.",
    pythonModule: "nodes",
    required: { images: { type: "IMAGE" } },
    hidden: { prompt: "PROMPT", extra_pnginfo: "EXTRA_PNGINFO" },
    outputs: [],
    outputNode: true,
    run: (i, ctx) => saveImages(image(i.images), `ComfyUI_temp_${randomLetters(5)}`, "temp", ctx)
  },
  {
    name: "SaveAnimatedWEBP",
    displayName: "SaveAnimatedWEBP",
    category: "image/animation",
    description: "",
    pythonModule: "comfy_extras.nodes_images",
    required: {
      images: { type: "IMAGE" },
      filename_prefix: { type: "STRING", default: "ComfyUI" },
      fps: { type: "FLOAT", default: 6.0, min: 0.01, max: 1000.0, step: 0.01 },
      lossless: { type: "BOOLEAN", default: true },
      quality: int(80, 0, 100),
      method: combo(["default", "fastest", "slowest"])
    },
    hidden: { prompt: "PROMPT", extra_pnginfo: "EXTRA_PNGINFO" },
    outputs: [],
    outputNode: true,
    run: async (i, ctx) => {
      const img = image(i.images)
      const target = await saveTarget(ctx, "output", pyStr(i.filename_prefix), img)
      const file = `${target.filename}_${String(target.counter).padStart(5, "0")}_.webp`
      await fs.writeFile(path.join(target.folder, file), animatedWebp(img.width, img.height, img.color, img.batch, 1000 / Number(i.fps)))
      await ctx.files.saved(target, target.counter + 1)
      return { outputs: [], ui: { images: [{ filename: file, subfolder: target.subfolder, type: "output" }], animated: [img.batch !== 1] } }
    }
  },
  {
    // Loaded by ComfyUI from custom_nodes/ (with `--whitelist-custom-nodes websocket_image_save.py`
    // when custom nodes are disabled): each image, full size, is a PNG preview of a progress step.
    name: "SaveImageWebsocket",
    displayName: "SaveImageWebsocket",
    category: "api/image",
    description: "",
    pythonModule: "custom_nodes.websocket_image_save",
    required: { images: { type: "IMAGE" } },
    outputs: [],
    outputNode: true,
    isChanged: () => Promise.resolve(`${Date.now()}:${Math.random()}`),
    run: async (i, ctx) => {
      const img = image(i.images)
      for (let b = 0; b < img.batch; b++) await ctx.progress(b, img.batch, solidPng(img.width, img.height, img.color))
      return { outputs: [] }
    }
  },
  ...MEDIA_NODES,
  ...LARGE_OUTPUT_NODES,
  primitive("PrimitiveString", "STRING", { type: "STRING", default: "" }),
  primitive("PrimitiveStringMultiline", "STRING", { type: "STRING", default: "", multiline: true }),
  primitive("PrimitiveInt", "INT", { type: "INT", default: 0, min: -MAX_SIZE, max: MAX_SIZE, step: 1 }),
  primitive("PrimitiveFloat", "FLOAT", { type: "FLOAT", default: 0, min: -MAX_SIZE, max: MAX_SIZE }),
  primitive("PrimitiveBoolean", "BOOLEAN", { type: "BOOLEAN", default: false }),
  {
    name: "StringConcatenate",
    displayName: "Concatenate",
    category: "utils/string",
    description: "",
    pythonModule: "comfy_extras.nodes_string",
    required: {
      string_a: { type: "STRING", multiline: true },
      string_b: { type: "STRING", multiline: true },
      delimiter: { type: "STRING", default: "" }
    },
    outputs: ["STRING"],
    outputNode: false,
    run: (i) => Promise.resolve({ outputs: [`${pyStr(i.string_a)}${pyStr(i.delimiter)}${pyStr(i.string_b)}`] })
  },
  {
    name: "PreviewAny",
    displayName: "Preview Any",
    category: "utils",
    description: "",
    pythonModule: "comfy_extras.nodes_preview_any",
    required: { source: { type: "*" } },
    outputs: [],
    outputNode: true,
    run: (i) => {
      const v = i.source
      const text = typeof v === "string" || typeof v === "number" || typeof v === "boolean" || isImage(v) || isMask(v)
        ? describeValue(v)
        : JSON.stringify(v, null, 4)
      return Promise.resolve({ outputs: [], ui: { text: [text] } })
    }
  },
  {
    name: "FakeSleep",
    displayName: "Sleep (fake ComfyUI only)",
    category: "testing",
    description: "Waits `seconds` in `steps` progress steps (interruptible at each step) and passes `value` through.",
    pythonModule: "wes_fake_comfyui",
    required: {
      seconds: { type: "FLOAT", default: 1.0, min: 0, max: 3600, step: 0.01 },
      steps: int(10, 1, 10000)
    },
    optional: { value: { type: "*" } },
    outputs: ["*"],
    outputNames: ["value"],
    outputNode: false,
    run: async (i, ctx) => {
      const steps = Number(i.steps)
      const ms = (Number(i.seconds) * 1000) / steps
      for (let s = 1; s <= steps; s++) {
        await ctx.sleep(ms)
        await ctx.progress(s, steps, ctx.previews ? solidPng(8, 8, 0x336699) : undefined)
      }
      return { outputs: [i.value ?? null] }
    }
  }
]

/** Every node class the fake knows, by `class_type`. */
export const NODES: ReadonlyMap<string, NodeDef> = new Map(CATALOGUE.map((n) => [n.name, n]))

/** The `[type, options]` pair `/object_info` and validation errors show for an input. */
export const inputConfig = async (spec: InputSpec, files: FileStore): Promise<[unknown, Record<string, unknown>]> => {
  if (spec.type === "COMBO" && "options" in spec) {
    return [await spec.options(files), { ...spec.extra }]
  }
  const { type, ...rest } = spec as { type: string } & Record<string, unknown>
  const opts: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(rest)) {
    if (k === "extra" && typeof v === "object" && v !== null) Object.assign(opts, v)
    else opts[k] = v
  }
  return [type, opts]
}

/** `node_info` of `/object_info`. */
export const nodeInfo = async (def: NodeDef, files: FileStore): Promise<Record<string, unknown>> => {
  const section = async (specs: Readonly<Record<string, InputSpec>>) => {
    const out: Record<string, unknown> = {}
    for (const [k, spec] of Object.entries(specs)) {
      const [type, opts] = await inputConfig(spec, files)
      out[k] = Object.keys(opts).length === 0 && typeof type === "string" ? [type] : [type, opts]
    }
    return out
  }
  const input: Record<string, unknown> = { required: await section(def.required) }
  const order: Record<string, Array<string>> = { required: Object.keys(def.required) }
  if (def.optional !== undefined) {
    input.optional = await section(def.optional)
    order.optional = Object.keys(def.optional)
  }
  if (def.hidden !== undefined) {
    input.hidden = def.hidden
    order.hidden = Object.keys(def.hidden)
  }
  return {
    input,
    input_order: order,
    output: def.outputs,
    output_is_list: def.outputs.map(() => false),
    output_name: def.outputNames ?? def.outputs,
    name: def.name,
    display_name: def.displayName,
    description: def.description,
    python_module: def.pythonModule,
    category: def.category,
    output_node: def.outputNode
  }
}
