import { CryptoWeb } from "../../src/domain/Crypto.js"
import { indexSummary, missingOn, needsOf, workflowNeeds } from "../../src/domain/Needs.js"
import { modelFileCount, summarize, summaryHash } from "../../src/domain/Summary.js"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"

/** `/object_info` shapes as ComfyUI 0.3.64 sends them (V1 combos, a V3 COMBO, uploads, a non-file combo). */
const objectInfo = (ckpts: ReadonlyArray<string>, loras: ReadonlyArray<string> = []) => ({
  CheckpointLoaderSimple: { input: { required: { ckpt_name: [ckpts, { tooltip: "The name of the checkpoint (model) to load." }] } } },
  LoraLoader: {
    input: {
      required: {
        model: ["MODEL"],
        lora_name: [loras, { tooltip: "The name of the LoRA." }],
        strength_model: ["FLOAT", { default: 1, min: -100, max: 100 }]
      }
    }
  },
  VAELoader: { input: { required: { vae_name: [["pixel_space", "taesd"]] } } },
  TripleCLIPLoader: { input: { required: { clip_name1: ["COMBO", { multiselect: false, options: [...loras] }] } } },
  KSampler: { input: { required: { sampler_name: [["euler", "dpmpp_2m"], {}], seed: ["INT", { default: 0 }] } } },
  LoadImage: { input: { required: { image: [["example.png"], { image_upload: true }] } } },
  LoadVideo: { input: { required: { file: ["COMBO", { options: ["clip.mp4"], video_upload: true }] } } },
  SaveImage: { input: { required: { images: ["IMAGE"], filename_prefix: ["STRING", { default: "ComfyUI" }] } } }
})

const graph = (ckpt: string, extra: Record<string, unknown> = {}) => ({
  "1": { class_type: "CheckpointLoaderSimple", inputs: { ckpt_name: ckpt } },
  "2": { class_type: "KSampler", inputs: { sampler_name: "euler", seed: 3 } },
  "3": { class_type: "LoadImage", inputs: { image: "wes/upload.png" } },
  "4": { class_type: "SaveImage", inputs: { images: ["3", 0], filename_prefix: "out.png" } },
  ...extra
})

describe("capability summary", () => {
  it("keeps every node class, and the file lists of loader inputs only (not uploads, not plain values)", () => {
    const s = summarize(objectInfo(["sdxl.safetensors", "sub\\v15.ckpt"], ["detail.safetensors"]))
    expect(s.node_classes).toEqual(["CheckpointLoaderSimple", "KSampler", "LoraLoader", "LoadImage", "LoadVideo", "SaveImage", "TripleCLIPLoader", "VAELoader"].sort())
    expect(s.model_inputs.map(([c, i]) => `${c}.${i}`)).toEqual([
      "CheckpointLoaderSimple.ckpt_name",
      "KSampler.sampler_name",
      "LoraLoader.lora_name",
      "TripleCLIPLoader.clip_name1",
      "VAELoader.vae_name"
    ])
    const files = (c: string, i: string) => s.file_lists[s.model_inputs.find(([x, y]) => x === c && y === i)![2]]
    expect(files("CheckpointLoaderSimple", "ckpt_name")).toEqual(["sdxl.safetensors", "sub/v15.ckpt"])
    // One list, stored once, for the two loaders that offer the same files.
    expect(files("LoraLoader", "lora_name")).toBe(files("TripleCLIPLoader", "clip_name1"))
    expect(modelFileCount(s)).toBe(3)
  })

  it("gives the same hash whatever order ComfyUI lists classes and files in, another for other files", async () => {
    const hash = (info: unknown) => Effect.runPromise(summaryHash(summarize(info)).pipe(Effect.provide(CryptoWeb)))
    const a = objectInfo(["a.safetensors", "b.safetensors"])
    const reordered = Object.fromEntries(Object.entries(objectInfo(["b.safetensors", "a.safetensors"])).reverse())
    expect(await hash(a)).toBe(await hash(reordered))
    expect(await hash(a)).not.toBe(await hash(objectInfo(["a.safetensors"])))
  })

  it("reads an answer of an unexpected shape as no capabilities rather than failing", () => {
    expect(summarize([1, 2]).node_classes).toEqual([])
    expect(summarize({ Weird: { input: { required: { x: "not a spec", y: [[1, {}]] } } } })).toEqual({
      node_classes: ["Weird"],
      model_inputs: [],
      file_lists: [],
      widgets: [],
      input_types: []
    })
  })
})

describe("what a workflow needs, and what a runner lacks", () => {
  it("needs every class_type and every file named in an input; lacks only what the runner is known not to have", () => {
    const needs = workflowNeeds(graph("sdxl.safetensors"))
    expect(needs.node_classes).toEqual(["CheckpointLoaderSimple", "KSampler", "LoadImage", "SaveImage"])
    const has = indexSummary(summarize(objectInfo(["sdxl.safetensors"])))
    expect(missingOn(has, needs)).toEqual({ node_classes: [], model_files: [], params: [] })
    const lacks = indexSummary(summarize(objectInfo(["v15.ckpt"])))
    expect(missingOn(lacks, needs)).toEqual({
      node_classes: [],
      model_files: [{ node_class: "CheckpointLoaderSimple", input: "ckpt_name", file: "sdxl.safetensors" }],
      params: []
    })
  })

  it("names missing node classes, and does not also report the files of a class the runner lacks", () => {
    const needs = workflowNeeds(graph("sdxl.safetensors", { "5": { class_type: "UltimateSDUpscale", inputs: { upscale_model: "4x.pth" } } }))
    const runner = indexSummary(summarize(objectInfo([])))
    expect(missingOn(runner, needs)).toEqual({
      node_classes: ["UltimateSDUpscale"],
      model_files: [{ node_class: "CheckpointLoaderSimple", input: "ckpt_name", file: "sdxl.safetensors" }],
      params: []
    })
  })

  it("checks the value a #choice or $text parameter puts into a loader, not the placeholder", () => {
    const json = graph("#choice(model, sdxl.safetensors, flux.safetensors)")
    const runner = indexSummary(summarize(objectInfo(["sdxl.safetensors"])))
    const chosen = (value: string) => missingOn(runner, needsOf(json, [["#choice(model)", value]])).model_files.map((f) => f.file)
    expect(chosen("sdxl.safetensors")).toEqual([])
    expect(chosen("flux.safetensors")).toEqual(["flux.safetensors"])
    // File parameters are uploads: their stored key is never taken for a model.
    const upload = graph("sdxl.safetensors", { "3": { class_type: "LoadImage", inputs: { image: "$file(photo)" } } })
    expect(needsOf(upload, [["$file(photo)", "inputs/w/photo/x.safetensors"]]).model_files.map((f) => f.file)).not.toContain(
      "inputs/w/photo/x.safetensors"
    )
  })

  it("compares paths with forward slashes, as ComfyUI on Windows lists them with backslashes", () => {
    const runner = indexSummary(summarize(objectInfo(["sdxl\\base.safetensors"])))
    expect(missingOn(runner, workflowNeeds(graph("sdxl/base.safetensors"))).model_files).toEqual([])
    expect(missingOn(runner, workflowNeeds(graph("sdxl\\base.safetensors"))).model_files).toEqual([])
  })
})
