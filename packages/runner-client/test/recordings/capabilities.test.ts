/**
 * Core's capability summary and matching on `/object_info` as each recorded ComfyUI version really
 * sends it (the `object-info` and `object-info-loaders` recordings; 0.3.45 describes loaders that
 * 0.3.64 gives as V3 `COMBO`s as V1 lists): which inputs count as model files, and what a workflow
 * then lacks on such a runner. The recorded installs have no models, so their loader lists are
 * empty; "installing" a file is adding it to the recorded list.
 */
import { indexSummary, missingOn, summarize, workflowNeeds } from "@wes/core/testing"
import { describe, expect, it } from "vitest"
import { readRecording, RECORDED_VERSIONS } from "./stored.js"

/** The classes of both recordings of `version`, as one `/object_info` answer. */
const recordedOn = (version: string): Record<string, { input: { required: Record<string, Array<unknown>> } }> =>
  Object.assign({}, ...["object-info", "object-info-loaders"].flatMap((name) => readRecording(version, name).http.map((e) => e.answer)))

/** The recorded answer with `files` in a V1 loader's list (`[[...files], {...}]`) or a V3 one (`["COMBO", {options}]`). */
const withFilesOn = (version: string, nodeClass: string, input: string, files: ReadonlyArray<string>) => {
  const info = recordedOn(version)
  const spec = info[nodeClass]!.input.required[input]!
  if (Array.isArray(spec[0])) spec[0] = [...files]
  else (spec[1] as { options: Array<string> }).options = [...files]
  return info
}

const sdxl = {
  "4": { class_type: "CheckpointLoaderSimple", inputs: { ckpt_name: "sd_xl_base_1.0.safetensors" } },
  "5": { class_type: "LoraLoader", inputs: { model: ["4", 0], clip: ["4", 1], lora_name: "detail.safetensors", strength_model: 1, strength_clip: 1 } },
  "6": { class_type: "KSampler", inputs: { model: ["5", 0], sampler_name: "euler", scheduler: "normal", seed: 1 } },
  "7": { class_type: "LoadImage", inputs: { image: "wes/0192_photo.png" } },
  "8": { class_type: "SaveImage", inputs: { images: ["7", 0], filename_prefix: "out" } }
}

for (const version of RECORDED_VERSIONS) {
  const recorded = () => recordedOn(version)
  const withFiles = (nodeClass: string, input: string, files: ReadonlyArray<string>) => withFilesOn(version, nodeClass, input, files)

  describe(`capabilities of a recorded ComfyUI ${version}`, () => {
    it("takes the loaders' combos (V1 and V3, empty or not) as model inputs, and neither uploads nor plain options", () => {
      const inputs = summarize(recorded()).model_inputs.map(([c, i]) => `${c}.${i}`)
      expect(inputs).toEqual(expect.arrayContaining([
        "CheckpointLoaderSimple.ckpt_name",
        "CheckpointLoader.ckpt_name",
        "CheckpointLoader.config_name",
        "LoraLoader.lora_name",
        "LoraLoaderModelOnly.lora_name",
        "VAELoader.vae_name",
        "UNETLoader.unet_name",
        "CLIPLoader.clip_name",
        "TripleCLIPLoader.clip_name1",
        "ControlNetLoader.control_net_name"
      ]))
      for (const upload of ["LoadImage.image", "LoadImageOutput.image", "LoadVideo.file"]) expect(inputs).not.toContain(upload)
      for (const plain of ["KSampler.scheduler", "UNETLoader.weight_dtype", "CLIPLoader.type", "ImageScale.upscale_method"]) {
        expect(inputs).not.toContain(plain)
      }
    })

    it("lacks the checkpoint and LoRA a workflow names until they are installed; an uploaded image is never a model", () => {
      const needs = workflowNeeds(sdxl)
      const bare = missingOn(indexSummary(summarize(recorded())), needs)
      expect(bare).toEqual({
        node_classes: [],
        model_files: [
          { node_class: "CheckpointLoaderSimple", input: "ckpt_name", file: "sd_xl_base_1.0.safetensors" },
          { node_class: "LoraLoader", input: "lora_name", file: "detail.safetensors" }
        ],
        params: []
      })
      const installed = withFiles("CheckpointLoaderSimple", "ckpt_name", ["sd_xl_base_1.0.safetensors"])
      installed["LoraLoader"]!.input.required["lora_name"]![0] = ["detail.safetensors"]
      expect(missingOn(indexSummary(summarize(installed)), needs)).toEqual({ node_classes: [], model_files: [], params: [] })
    })

    it("reads the declared types of widget inputs as the recording gives them (typed parameters)", () => {
      const types = indexSummary(summarize(recorded())).types!
      const typeOf = (nodeClass: string, input: string) => types.get(nodeClass)?.(input)
      expect(typeOf("EmptyImage", "width")).toEqual({ type: "INT", min: 1, max: 16384, step: 1 })
      expect(typeOf("ImageScale", "upscale_method")).toEqual({ type: "COMBO", options: ["nearest-exact", "bilinear", "area", "bicubic", "lanczos"] })
      expect(typeOf("KSampler", "scheduler")).toMatchObject({ type: "COMBO" })
      expect(typeOf("KSampler", "cfg")).toEqual({ type: "FLOAT", min: 0, max: 100 })
      // Model lists, uploads and text are not typed.
      for (const [c, i] of [["CheckpointLoaderSimple", "ckpt_name"], ["LoadImage", "image"], ["SaveImage", "filename_prefix"]] as const) {
        expect(typeOf(c, i), `${c}.${i}`).toBeUndefined()
      }
    })

    it("checks TripleCLIPLoader's options the same way (a V3 COMBO on 0.3.64, a V1 list on 0.3.45)", () => {
      const needs = workflowNeeds({ "1": { class_type: "TripleCLIPLoader", inputs: { clip_name1: "clip_g.safetensors" } } })
      expect(missingOn(indexSummary(summarize(recorded())), needs).model_files.map((f) => f.file)).toEqual(["clip_g.safetensors"])
      const installed = withFiles("TripleCLIPLoader", "clip_name1", ["clip_g.safetensors"])
      expect(missingOn(indexSummary(summarize(installed)), needs).model_files).toEqual([])
    })

    it("names node classes a bare ComfyUI does not have (custom nodes)", () => {
      const needs = workflowNeeds({ ...sdxl, "9": { class_type: "IPAdapterAdvanced", inputs: {} } })
      const installed = withFiles("CheckpointLoaderSimple", "ckpt_name", ["sd_xl_base_1.0.safetensors"])
      expect(missingOn(indexSummary(summarize(installed)), needs).node_classes).toEqual(["IPAdapterAdvanced"])
    })
  })
}
