/**
 * The declared types of widget inputs, read from `/object_info`, so that a placeholder's value can
 * be sent as what the input takes (ComfyUI converts a BOOLEAN with Python's `bool()`: the string
 * "false" is True). Shapes, in 0.3.45 and 0.3.64 alike: `["BOOLEAN", {default}]`,
 * `["INT", {min, max, step}]`, `["FLOAT", {min, max, step, round}]`, V1 combos
 * `[[...options], {...}]` and V3 combos `["COMBO", {options: [...], multiselect}]`. STRING and
 * link types need no conversion and are not kept. Model lists (a combo offering files), uploads
 * and multi-select combos are left out: the model match checks the first, ComfyUI's own
 * validation the others.
 */
import * as Schema from "effect/Schema"

const Bound = Schema.optionalKey(Schema.Finite)

/** What a widget input takes. */
export const InputType = Schema.Union([Schema.Struct({ type: Schema.Literal("BOOLEAN") }),
  Schema.Struct({ type: Schema.Literal("INT"), min: Bound, max: Bound, step: Bound }),
  Schema.Struct({ type: Schema.Literal("FLOAT"), min: Bound, max: Bound }),
  Schema.Struct({ type: Schema.Literal("COMBO"), options: Schema.Array(Schema.Union([Schema.String, Schema.Finite])) })]).annotate({ identifier: "InputType" })
export type InputType = typeof InputType.Type

/** A value that names a file: ends in an extension (`.safetensors`, `.ckpt`, `.pt`, `.gguf`, `.yaml`, ...). */
export const looksLikeFile = (value: string): boolean => /\.[A-Za-z0-9_-]{1,16}$/.test(value) && !/\s$/.test(value)

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The options of a combo input (V1: `[[...options], {...}]`; V3: `["COMBO", {options: [...]}]`), or undefined. */
export const comboOf = (spec: unknown): { readonly options: ReadonlyArray<unknown>; readonly config: Record<string, unknown> } | undefined => {
  if (!Array.isArray(spec) || spec.length === 0) return undefined
  const config = isObject(spec[1]) ? spec[1] : {}
  if (Array.isArray(spec[0])) return { options: spec[0], config }
  if (spec[0] === "COMBO" && Array.isArray(config["options"])) return { options: config["options"], config }
  return undefined
}

/** `image_upload`, `video_upload`, `audio_upload`, ...: the input lists uploads, not models. */
export const isUpload = (config: Record<string, unknown>): boolean =>
  Object.entries(config).some(([k, v]) => k.endsWith("_upload") && v === true)

const finite = (u: unknown): number | undefined => (typeof u === "number" && Number.isFinite(u) ? u : undefined)

/** Only the bounds a spec declares (an absent key stays absent). */
const bounds = <K extends string>(config: Record<string, unknown>, keys: ReadonlyArray<K>): { [P in K]?: number } => {
  const out: { [P in K]?: number } = {}
  for (const k of keys) {
    const v = finite(config[k])
    if (v !== undefined) out[k] = v
  }
  return out
}

/**
 * The type of one input spec, or undefined when its value needs no conversion (STRING, links) or
 * is checked elsewhere (model lists, uploads, multi-select).
 */
export const inputTypeOf = (spec: unknown): InputType | undefined => {
  if (!Array.isArray(spec)) return undefined
  const config = isObject(spec[1]) ? spec[1] : {}
  switch (spec[0]) {
    case "BOOLEAN":
      return { type: "BOOLEAN" }
    case "INT":
      return { type: "INT", ...bounds(config, ["min", "max", "step"]) }
    case "FLOAT":
      return { type: "FLOAT", ...bounds(config, ["min", "max"]) }
  }
  const combo = comboOf(spec)
  if (combo === undefined || isUpload(combo.config) || config["multiselect"] === true || config["multi_select"] === true) return undefined
  const options = combo.options
  if (options.length === 0 || !options.every((o) => typeof o === "string" || finite(o) !== undefined)) return undefined
  if (options.some((o) => typeof o === "string" && looksLikeFile(o))) return undefined
  return { type: "COMBO", options: options as ReadonlyArray<string | number> }
}
