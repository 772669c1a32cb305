import { findPlaceholders, type JsonObject, type Placeholder, placeholderKey, type SuppliedParam } from "@wes/core"
import { parsePlaceholder, resolveParams, substitute } from "../src/domain/Placeholders.js"
import * as Result from "effect/Result"
import { describe, expect, it } from "vitest"

const graph: JsonObject = {
  "1": { class_type: "LoadImage", inputs: { image: "$file(photo)" } },
  "2": { class_type: "CLIPTextEncode", inputs: { text: "$text(prompt)", clip: ["4", 1] } },
  "3": { class_type: "KSampler", inputs: { seed: "$text(seed, 42)", sampler_name: "#choice(sampler, euler, dpmpp_2m)" } },
  "4": { class_type: "CheckpointLoaderSimple", inputs: { ckpt_name: "#choice(model)" } },
  "5": { class_type: "CLIPTextEncode", inputs: { text: "$text(prompt)", clip: ["4", 1] } }
}

const found = (g: JsonObject): ReadonlyArray<Placeholder> => Result.getOrThrow(findPlaceholders(g))
const text = (field: string, t: string): SuppliedParam<string> => ({ field, value: { _tag: "Text", text: t } })
const file = (field: string, f: string): SuppliedParam<string> => ({ field, value: { _tag: "File", file: f } })
const failureOf = <A>(r: Result.Result<A, { message: string; details: ReadonlyArray<{ field: string; message: string }> }>) => {
  if (Result.isSuccess(r)) throw new Error("expected a failure")
  return r.failure
}

describe("placeholders: parsing", () => {
  it("parses each form", () => {
    expect(parsePlaceholder("$text(prompt)")).toEqual(Result.succeed({ kind: "text", name: "prompt", default: undefined, options: [] }))
    expect(parsePlaceholder("$text(seed, 42)")).toEqual(Result.succeed({ kind: "text", name: "seed", default: "42", options: [] }))
    expect(parsePlaceholder("$text(note, a, b)")).toEqual(Result.succeed({ kind: "text", name: "note", default: "a, b", options: [] }))
    expect(parsePlaceholder("$file(photo)")).toEqual(Result.succeed({ kind: "file", name: "photo", default: undefined, options: [] }))
    expect(parsePlaceholder("#choice(s, a, b)")).toEqual(Result.succeed({ kind: "choice", name: "s", default: "a", options: ["a", "b"] }))
  })

  it("ignores strings that are not placeholders", () => {
    for (const s of ["a cat", "$textual", "text(x)", " $text(x)", "#choices"]) expect(parsePlaceholder(s)).toBeUndefined()
  })

  it("rejects malformed placeholders with a reason", () => {
    expect(parsePlaceholder("$text(a b)")).toEqual(Result.fail(expect.stringContaining("must be 1-255 characters")))
    expect(parsePlaceholder("$text()")).toEqual(Result.fail(expect.stringContaining("must be 1-255 characters")))
    expect(parsePlaceholder("$text(x")).toEqual(Result.fail('$text(...) must end with ")"'))
    expect(parsePlaceholder("$file(x, y)")).toEqual(Result.fail("$file(x) takes no default"))
    expect(parsePlaceholder("#choice(x, a, , b)")).toEqual(Result.fail(expect.stringContaining("empty option")))
    expect(parsePlaceholder("#choice(x, a, a)")).toEqual(Result.fail(expect.stringContaining("option twice")))
  })

  it("accepts names of 255 characters of [A-Za-z0-9_-] and rejects 256", () => {
    const name = "a_B-9".repeat(51)
    expect(Result.isSuccess(parsePlaceholder(`$text(${name})`)!)).toBe(true)
    expect(Result.isFailure(parsePlaceholder(`$text(${name}x)`)!)).toBe(true)
  })
})

describe("placeholders: finding in a workflow", () => {
  it("finds every placeholder once, in order of first appearance, with all its locations", () => {
    const ps = found(graph)
    expect(ps.map(placeholderKey)).toEqual(["$file(photo)", "$text(prompt)", "$text(seed)", "#choice(sampler)", "#choice(model)"])
    expect(ps[1]!.locations).toEqual([{ node: "2", input: "text" }, { node: "5", input: "text" }])
  })

  it("rejects a malformed placeholder naming node and input", () => {
    const e = failureOf(findPlaceholders({ "1": { class_type: "X", inputs: { text: "$text(bad name)" } } }))
    expect(e.details[0]!.field).toBe("workflow_json.1.inputs.text")
  })

  it("rejects one field name used for text and file", () => {
    const e = failureOf(findPlaceholders({
      "1": { class_type: "X", inputs: { a: "$text(x)" } },
      "2": { class_type: "Y", inputs: { b: "$file(x)" } }
    }))
    expect(e.message).toContain("conflicts with $text(x)")
  })

  it("rejects the same placeholder declared with different defaults", () => {
    const e = failureOf(findPlaceholders({
      "1": { class_type: "X", inputs: { a: "$text(x, 1)" } },
      "2": { class_type: "Y", inputs: { b: "$text(x, 2)" } }
    }))
    expect(e.message).toContain("different kinds, defaults or options")
  })

  it("lets $text(x) and #choice(x) coexist: they are fed by different fields", () => {
    expect(found({ "1": { class_type: "X", inputs: { a: "$text(x)", b: "#choice(x)" } } })).toHaveLength(2)
  })
})

describe("placeholders: validating supplied parameters", () => {
  const ps = found(graph)
  const required = [file("$photo", "p.png"), text("$prompt", "a cat"), text("#model", "sdxl")]

  it("resolves supplied values, defaults and choices", () => {
    const r = Result.getOrThrow(resolveParams(ps, required))
    expect(r.map((x) => [placeholderKey(x.placeholder), x.value])).toEqual([
      ["$file(photo)", { _tag: "Upload", file: "p.png" }],
      ["$text(prompt)", { _tag: "Value", value: "a cat" }],
      ["$text(seed)", { _tag: "Value", value: "42" }],
      ["#choice(sampler)", { _tag: "Value", value: "euler" }],
      ["#choice(model)", { _tag: "Value", value: "sdxl" }]
    ])
  })

  it("rejects a field that matches no placeholder, naming it", () => {
    const e = failureOf(resolveParams(ps, [...required, text("$nope", "x")]))
    expect(e.message).toBe("Parameter validation failed: $nope does not match any placeholder of the workflow")
    expect(e.details).toEqual([{ field: "$nope", message: "does not match any placeholder of the workflow" }])
  })

  it("rejects a string sent for a file placeholder and a file for a text one", () => {
    const e1 = failureOf(resolveParams(ps, [text("$photo", "p.png"), text("$prompt", "x"), text("#model", "m")]))
    expect(e1.details[0]).toEqual({ field: "$photo", message: "$file(photo) needs a file, but a text value was sent" })
    const e2 = failureOf(resolveParams(ps, [file("$photo", "p"), file("$prompt", "x"), text("#model", "m")]))
    expect(e2.details[0]!.message).toBe("$text(prompt) needs a text value, but a file was sent")
    const e3 = failureOf(resolveParams(ps, [...required.slice(0, 2), file("#model", "m")]))
    expect(e3.details[0]!.field).toBe("#model")
  })

  it("rejects a choice outside its options", () => {
    const e = failureOf(resolveParams(ps, [...required, text("#sampler", "ddim")]))
    expect(e.details[0]).toEqual({ field: "#sampler", message: '"ddim" is not one of "euler", "dpmpp_2m"' })
  })

  it("accepts any value for a choice declared without options", () => {
    expect(Result.isSuccess(resolveParams(ps, [...required.slice(0, 2), text("#model", "anything.safetensors")]))).toBe(true)
  })

  it("rejects a placeholder with no value and no default on create", () => {
    const e = failureOf(resolveParams(ps, [file("$photo", "p.png"), text("#model", "m")]))
    expect(e.details).toEqual([{ field: "$prompt", message: "is required by $text(prompt), which has no default" }])
  })

  it("rejects a field sent twice", () => {
    const e = failureOf(resolveParams(ps, [...required, text("$prompt", "again")]))
    expect(e.details[0]).toEqual({ field: "$prompt", message: "is sent more than once" })
  })

  it("on rerun, keeps the original's values for what is not sent and overrides what is", () => {
    const original = [
      ["$file(photo)", "inputs/w/photo/p.png"],
      ["$text(prompt)", "a cat"],
      ["$text(seed)", "7"],
      ["#choice(sampler)", "dpmpp_2m"],
      ["#choice(model)", "sdxl"]
    ] as const
    const r = Result.getOrThrow(resolveParams(ps, [text("$prompt", "a dog")], original))
    expect(r.map((x) => x.value)).toEqual([
      { _tag: "Value", value: "inputs/w/photo/p.png" },
      { _tag: "Value", value: "a dog" },
      { _tag: "Value", value: "7" },
      { _tag: "Value", value: "dpmpp_2m" },
      { _tag: "Value", value: "sdxl" }
    ])
  })
})

describe("placeholders: substitution", () => {
  it("replaces every occurrence and leaves the input untouched", () => {
    const ps = found(graph)
    const before = JSON.stringify(graph)
    const out = substitute(graph, ps, new Map([["$text(prompt)", "a cat"], ["$file(photo)", "wes/p.png"], ["$text(seed)", "42"]]))
    expect(out["2"]).toEqual({ class_type: "CLIPTextEncode", inputs: { text: "a cat", clip: ["4", 1] } })
    expect(out["5"]).toEqual({ class_type: "CLIPTextEncode", inputs: { text: "a cat", clip: ["4", 1] } })
    expect((out["1"] as { inputs: unknown }).inputs).toEqual({ image: "wes/p.png" })
    expect((out["3"] as { inputs: { seed: string; sampler_name: string } }).inputs.sampler_name).toBe("#choice(sampler, euler, dpmpp_2m)")
    expect(JSON.stringify(graph)).toBe(before)
  })
})
