/**
 * What a runner can run, reduced from ComfyUI's `/object_info` (about 0.5 MB and 471 node
 * classes for a bare 0.3.64, several MB with custom nodes) to a compact summary: the node class
 * names, and for each model-loader input (a combo whose options are files: `ckpt_name`,
 * `lora_name`, `vae_name`, ...) its file list. Upload inputs (`LoadImage.image`) list the input
 * folder, not models, and are left out. Lists shared by several loaders are stored once. Where the
 * runner answers `GET /node_replacements` (newer ComfyUI), the deprecated classes it would replace
 * with a loaded one before validating a prompt are kept too.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { NodeReplacements } from "../runners/RunnerGateway.js"
import { Crypto } from "../shared/Crypto.js"

/** The stored summary: sorted, so equal capabilities give equal JSON (and hash). */
export const CapabilitySummary = Schema.Struct({
  node_classes: Schema.Array(Schema.String),
  /** `[node class, input name, index into file_lists]`, sorted. */
  model_inputs: Schema.Array(Schema.Tuple(Schema.String, Schema.String, Schema.Int)),
  file_lists: Schema.Array(Schema.Array(Schema.String)),
  /**
   * `[deprecated class, the loaded class the runner replaces it with]`, sorted; absent when none
   * (so summaries of runners without replacements hash as before).
   */
  node_replacements: Schema.optional(Schema.Array(Schema.Tuple(Schema.String, Schema.String)))
}).annotations({ identifier: "CapabilitySummary" })
export interface CapabilitySummary extends Schema.Schema.Type<typeof CapabilitySummary> {}

/** A value that names a file: ends in an extension (`.safetensors`, `.ckpt`, `.pt`, `.gguf`, `.yaml`, ...). */
export const looksLikeFile = (value: string): boolean => /\.[A-Za-z0-9_-]{1,16}$/.test(value) && !/\s$/.test(value)

/** Input names of model loaders, whatever their options (a loader with no files installed lists none). */
const LOADER_NAME = /(^|_)name\d*$/

/** ComfyUI writes paths with the runner's separator; WES compares them with `/`. */
export const normalizePath = (file: string): string => file.replace(/\\/g, "/")

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** The options of a combo input (V1: `[[...options], {...}]`; V3: `["COMBO", {options: [...]}]`), or undefined. */
const comboOf = (spec: unknown): { readonly options: ReadonlyArray<unknown>; readonly config: Record<string, unknown> } | undefined => {
  if (!Array.isArray(spec) || spec.length === 0) return undefined
  const config = isObject(spec[1]) ? spec[1] : {}
  if (Array.isArray(spec[0])) return { options: spec[0], config }
  if (spec[0] === "COMBO" && Array.isArray(config["options"])) return { options: config["options"], config }
  return undefined
}

/** `image_upload`, `video_upload`, `audio_upload`, ...: the input lists uploads, not models. */
const isUpload = (config: Record<string, unknown>): boolean =>
  Object.entries(config).some(([k, v]) => k.endsWith("_upload") && v === true)

/**
 * The replacements ComfyUI would make (`NodeReplaceManager.apply_replacements`): a class it has
 * not loaded, whose first replacement it has loaded. It never tries the second.
 */
const effectiveReplacements = (
  classes: ReadonlySet<string>,
  replacements: NodeReplacements
): Array<readonly [string, string]> =>
  Object.entries(replacements)
    .filter(([old, to]) => !classes.has(old) && to[0] !== undefined && classes.has(to[0]))
    .map(([old, to]) => [old, to[0]!] as const)
    .sort((a, b) => compare(a[0], b[0]))

/**
 * Reduces `/object_info` (and `/node_replacements`, when the runner has it) to a summary. Loops
 * over classes and their input sections only (no recursion into the answer); anything of an
 * unexpected shape is skipped.
 */
export const summarize = (objectInfo: unknown, replacements?: NodeReplacements): CapabilitySummary => {
  const summary = summarizeObjectInfo(objectInfo)
  const replaced = replacements === undefined ? [] : effectiveReplacements(new Set(summary.node_classes), replacements)
  return replaced.length === 0 ? summary : { ...summary, node_replacements: replaced }
}

const summarizeObjectInfo = (objectInfo: unknown): CapabilitySummary => {
  const classes: Array<string> = []
  const lists = new Map<string, number>()
  const fileLists: Array<ReadonlyArray<string>> = []
  const inputs: Array<readonly [string, string, number]> = []
  if (!isObject(objectInfo)) return { node_classes: [], model_inputs: [], file_lists: [] }
  for (const [name, info] of Object.entries(objectInfo)) {
    classes.push(name)
    const input = isObject(info) && isObject(info["input"]) ? info["input"] : {}
    for (const section of ["required", "optional"]) {
      const specs = input[section]
      if (!isObject(specs)) continue
      for (const [inputName, spec] of Object.entries(specs)) {
        const combo = comboOf(spec)
        if (combo === undefined || isUpload(combo.config)) continue
        const options = combo.options.filter((o): o is string => typeof o === "string")
        if (!options.some(looksLikeFile) && !LOADER_NAME.test(inputName)) continue
        const files = [...new Set(options.map(normalizePath))].sort()
        const key = JSON.stringify(files)
        let index = lists.get(key)
        if (index === undefined) {
          index = fileLists.length
          lists.set(key, index)
          fileLists.push(files)
        }
        inputs.push([name, inputName, index])
      }
    }
  }
  // Lists in a stable order (by content), indexes renumbered to match.
  const order = fileLists.map((_, i) => i).sort((a, b) => compare(JSON.stringify(fileLists[a]), JSON.stringify(fileLists[b])))
  const renumber = new Map(order.map((old, i) => [old, i]))
  return {
    node_classes: classes.sort(compare),
    model_inputs: inputs.map(([c, i, l]) => [c, i, renumber.get(l)!] as const)
      .sort((a, b) => compare(a[0], b[0]) || compare(a[1], b[1])),
    file_lists: order.map((i) => fileLists[i]!)
  }
}

const compare = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

/** Distinct model files across the summary's lists (what `GET /v1/runner/{id}` counts). */
export const modelFileCount = (s: CapabilitySummary): number => {
  const files = new Set<string>()
  for (const list of s.file_lists) for (const f of list) if (looksLikeFile(f)) files.add(f)
  return files.size
}

/** SHA-256 of the summary's JSON: equal for equal capabilities, whatever order ComfyUI listed them in. */
export const summaryHash = (s: CapabilitySummary): Effect.Effect<string, never, Crypto> =>
  Effect.flatMap(Crypto, (c) => c.sha256Hex(JSON.stringify(s)))
