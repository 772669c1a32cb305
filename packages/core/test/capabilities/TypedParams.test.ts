/**
 * Parameters typed by the input they fill: the types read from `/object_info` (shapes as
 * ComfyUI 0.3.45 and 0.3.64 send them), the conversion of a value, the prompt a runner gets, and
 * what a runner lacks when a value does not convert.
 */
import { findPlaceholders, type JsonObject } from "@wes/core"
import { convertTo } from "../../src/domain/Conversion.js"
import { indexSummary, missingOn, needsOf } from "../../src/domain/Needs.js"
import { summarize } from "../../src/domain/Summary.js"
import { typedPrompt } from "../../src/domain/TypedParams.js"
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"

/** Specs copied from a bare ComfyUI 0.3.64's `/object_info` (tooltips shortened). */
const objectInfo = {
  ImageStitch: {
    input: {
      required: {
        image1: ["IMAGE"],
        direction: [["right", "down", "left", "up"], { default: "right" }],
        match_image_size: ["BOOLEAN", { default: true }],
        spacing_width: ["INT", { default: 0, min: 0, max: 1024, step: 2 }],
        spacing_color: [["white", "black", "red", "green", "blue"], { default: "white" }]
      },
      optional: { image2: ["IMAGE"] }
    }
  },
  EmptyLatentImage: { input: { required: { width: ["INT", { default: 512, min: 16, max: 16384, step: 8, tooltip: "The width." }] } } },
  KSampler: {
    input: {
      required: {
        // 2^64 - 1 as ComfyUI writes it; JSON.parse rounds it to a double, as WES reads it.
        seed: JSON.parse('["INT", {"default": 0, "min": 0, "max": 18446744073709551615, "control_after_generate": true}]') as unknown,
        cfg: ["FLOAT", { default: 8.0, min: 0.0, max: 100.0, step: 0.1, round: 0.01 }],
        sampler_name: [["euler", "dpmpp_2m"], {}]
      }
    }
  },
  LatentBatchSeedBehavior: { input: { required: { seed_behavior: ["COMBO", { default: "fixed", multiselect: false, options: ["random", "fixed"] }] } } },
  MinimaxHailuoVideoNode: { input: { required: { duration: ["COMBO", { default: 6, multiselect: false, options: [6, 10] }] } } },
  Tagger: { input: { required: { tags: ["COMBO", { multi_select: true, multiselect: true, options: ["a", "b"] }] } } },
  CheckpointLoaderSimple: { input: { required: { ckpt_name: [["sdxl.safetensors"], { tooltip: "The checkpoint." }] } } },
  LoadImage: { input: { required: { image: [["example.png"], { image_upload: true }] } } },
  SaveImage: { input: { required: { images: ["IMAGE"], filename_prefix: ["STRING", { default: "ComfyUI" }] } } }
}

const types = indexSummary(summarize(objectInfo)).types!
const typeOf = (nodeClass: string, input: string) => types.get(nodeClass)?.(input)
const convert = (nodeClass: string, input: string, text: string) => convertTo(typeOf(nodeClass, input)!, text)

describe("input types read from /object_info", () => {
  it("keeps BOOLEAN, INT and FLOAT with their bounds, and V1 and V3 combos with their options", () => {
    expect(typeOf("ImageStitch", "match_image_size")).toEqual({ type: "BOOLEAN" })
    expect(typeOf("ImageStitch", "spacing_width")).toEqual({ type: "INT", min: 0, max: 1024, step: 2 })
    expect(typeOf("KSampler", "cfg")).toEqual({ type: "FLOAT", min: 0, max: 100 })
    expect(typeOf("ImageStitch", "direction")).toEqual({ type: "COMBO", options: ["right", "down", "left", "up"] })
    expect(typeOf("LatentBatchSeedBehavior", "seed_behavior")).toEqual({ type: "COMBO", options: ["random", "fixed"] })
    expect(typeOf("MinimaxHailuoVideoNode", "duration")).toEqual({ type: "COMBO", options: [6, 10] })
    // A non-file combo whose name looks like a loader's is still a choice of values.
    expect(typeOf("KSampler", "sampler_name")).toEqual({ type: "COMBO", options: ["euler", "dpmpp_2m"] })
  })

  it("leaves out text, links, model lists, uploads and multi-select combos (nothing to convert there)", () => {
    for (const [c, i] of [["SaveImage", "filename_prefix"], ["SaveImage", "images"], ["ImageStitch", "image2"], ["CheckpointLoaderSimple", "ckpt_name"], ["LoadImage", "image"], ["Tagger", "tags"]] as const) {
      expect(typeOf(c, i), `${c}.${i}`).toBeUndefined()
    }
  })
})

describe("converting a value to its input's type", () => {
  it("reads a BOOLEAN from true/false, yes/no and 1/0 in any case, and nothing else", () => {
    for (const t of ["true", "TRUE", "Yes", "1", " true "]) expect(convert("ImageStitch", "match_image_size", t)).toEqual(Result.succeed(true))
    for (const f of ["false", "False", "NO", "0"]) expect(convert("ImageStitch", "match_image_size", f)).toEqual(Result.succeed(false))
    for (const bad of ["", "maybe", "on", "2"]) {
      expect(convert("ImageStitch", "match_image_size", bad)).toEqual(Result.fail("a BOOLEAN (true/false, yes/no or 1/0)"))
    }
  })

  it("reads an INT within min and max, on the editor's grid of step counted from min", () => {
    expect(convert("EmptyLatentImage", "width", "512")).toEqual(Result.succeed(512))
    expect(convert("EmptyLatentImage", "width", "24")).toEqual(Result.succeed(24))
    for (const bad of ["500", "8", "16392", "512.5", "5e2", "0x200", "wide"]) {
      expect(convert("EmptyLatentImage", "width", bad)).toEqual(Result.fail("an INT from 16 to 16384 in steps of 8"))
    }
  })

  it("sends an INT past 2^53 as its digits (ComfyUI's int() reads them exactly), within the declared max", () => {
    expect(convert("KSampler", "seed", "18446744073709551615")).toEqual(Result.succeed("18446744073709551615"))
    expect(convert("KSampler", "seed", "9007199254740991")).toEqual(Result.succeed(9007199254740991))
    expect(Result.isFailure(convert("KSampler", "seed", "-1"))).toBe(true)
    expect(Result.isFailure(convert("KSampler", "seed", "99999999999999999999999"))).toBe(true)
  })

  it("reads a FLOAT within min and max", () => {
    expect(convert("KSampler", "cfg", "7.25")).toEqual(Result.succeed(7.25))
    expect(convert("KSampler", "cfg", "1e1")).toEqual(Result.succeed(10))
    expect(convert("KSampler", "cfg", "100.5")).toEqual(Result.fail("a FLOAT from 0 to 100"))
    expect(convert("KSampler", "cfg", "NaN")).toEqual(Result.fail("a FLOAT from 0 to 100"))
  })

  it("takes a combo value only when it is an option, and sends a numeric option as the number", () => {
    expect(convert("ImageStitch", "direction", "left")).toEqual(Result.succeed("left"))
    expect(convert("ImageStitch", "direction", "Left")).toEqual(Result.fail('one of "right", "down", "left", "up"'))
    expect(convert("MinimaxHailuoVideoNode", "duration", "10")).toEqual(Result.succeed(10))
    expect(convert("MinimaxHailuoVideoNode", "duration", "8")).toEqual(Result.fail('one of "6", "10"'))
  })
})

const graph: JsonObject = {
  "1": { class_type: "ImageStitch", inputs: { image1: ["2", 0], direction: "#choice(dir)", match_image_size: "$text(match)", spacing_width: 0, spacing_color: "white" } },
  "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "$text(match)" } },
  "3": { class_type: "LoadImage", inputs: { image: "$file(photo)" } }
}

const inputsOf = (prompt: JsonObject, node: string) => (prompt[node] as { inputs: Record<string, unknown> }).inputs

describe("the prompt a runner gets", () => {
  it("carries each value as the type of the input it fills: false for a BOOLEAN, the text for a STRING", () => {
    const prompt = Result.getOrThrow(typedPrompt(graph, [["$text(match)", "false"], ["#choice(dir)", "down"]], types))
    expect(inputsOf(prompt, "1")["match_image_size"]).toBe(false)
    expect(inputsOf(prompt, "1")["direction"]).toBe("down")
    expect(inputsOf(prompt, "2")["filename_prefix"]).toBe("false")
    // A file parameter not given here keeps its placeholder (its upload reference comes later).
    expect(inputsOf(prompt, "3")["image"]).toBe("$file(photo)")
  })

  it("names the parameter, the node, its input and the type when a value does not convert", () => {
    const wrong = typedPrompt(graph, [["$text(match)", "maybe"], ["#choice(dir)", "down"]], types)
    expect(wrong).toEqual(Result.fail(expect.objectContaining({
      field: "$match",
      value: "maybe",
      node: "1",
      node_class: "ImageStitch",
      input: "match_image_size",
      expected: "a BOOLEAN (true/false, yes/no or 1/0)"
    })))
  })

  it("on a runner whose types are not known, converts by the placeholder's default or options, else sends the text", () => {
    const unknown: JsonObject = {
      "1": { class_type: "Custom", inputs: { flag: "$text(flag, false)", mode: "#choice(mode, True, False)", steps: "$text(steps, 20)", note: "$text(note)" } }
    }
    const values = [["$text(flag)", "yes"], ["#choice(mode)", "False"], ["$text(steps)", "30"], ["$text(note)", "false"]] as const
    expect(inputsOf(Result.getOrThrow(typedPrompt(unknown, values, undefined)), "1")).toEqual({ flag: true, mode: false, steps: 30, note: "false" })
    expect(Result.isFailure(typedPrompt(unknown, [["$text(flag)", "maybe"]], undefined))).toBe(true)
  })
})

describe("what a runner lacks when a value does not convert", () => {
  const placeholders = Result.getOrThrow(findPlaceholders(graph))
  it("finds every input a text or choice value fills", () => {
    expect(placeholders.map((p) => p.name)).toEqual(["dir", "match", "photo"])
    const needs = needsOf(graph, [["$text(match)", "false"], ["#choice(dir)", "down"], ["$file(photo)", "inputs/w/photo/a.png"]])
    expect(needs.params.map((u) => `${u.field} ${u.node}.${u.input}`)).toEqual(["#dir 1.direction", "$match 1.match_image_size", "$match 2.filename_prefix"])
  })

  it("lacks only the parameters whose values the runner's inputs do not take", () => {
    const runner = indexSummary(summarize(objectInfo))
    expect(missingOn(runner, needsOf(graph, [["$text(match)", "no"], ["#choice(dir)", "up"]])).params).toEqual([])
    const missing = missingOn(runner, needsOf(graph, [["$text(match)", "no"], ["#choice(dir)", "sideways"]]))
    expect(missing.params.map((m) => `${m.field} ${m.node_class}.${m.input}: ${m.expected}`)).toEqual([
      '#dir ImageStitch.direction: one of "right", "down", "left", "up"'
    ])
    expect(missing.node_classes).toEqual([])
  })

  it("checks a runner whose capabilities are not known by the inferred types only", () => {
    const g: JsonObject = { "1": { class_type: "ImageStitch", inputs: { match_image_size: "$text(m, true)", direction: "$text(d)" } } }
    expect(missingOn(undefined, needsOf(g, [["$text(m)", "false"], ["$text(d)", "sideways"]])).params).toEqual([])
    expect(missingOn(undefined, needsOf(g, [["$text(m)", "maybe"], ["$text(d)", "up"]])).params.map((m) => m.field)).toEqual(["$m"])
  })

  it("treats a record stored before WES kept types as unknown types (inferred ones apply)", () => {
    const { input_types: _t, widgets: _w, ...old } = summarize(objectInfo)
    const runner = indexSummary(old)
    expect(runner.types).toBeUndefined()
    const g: JsonObject = { "1": { class_type: "ImageStitch", inputs: { match_image_size: "$text(m, true)" } } }
    expect(missingOn(runner, needsOf(g, [["$text(m)", "maybe"]])).params.map((m) => m.expected)).toEqual(["a BOOLEAN (true/false, yes/no or 1/0)"])
  })
})
