/**
 * What a runner can run, reduced from ComfyUI's `/object_info` (about 0.5 MB and 471 node
 * classes for a bare 0.3.64, several MB with custom nodes) to a compact summary: the node class
 * names, for each model-loader input (a combo whose options are files: `ckpt_name`,
 * `lora_name`, `vae_name`, ...) its file list, and the declared types of widget inputs
 * (InputTypes.ts). Upload inputs (`LoadImage.image`) list the input folder, not models, and are
 * left out. Lists and types shared by several inputs are stored once. Where the runner answers
 * `GET /node_replacements` (newer ComfyUI), the deprecated classes it would replace with a loaded
 * one before validating a prompt are kept too.
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { Crypto } from "./Crypto.js"
import { Timestamp } from "./Json.js"
import { comboOf, InputType, inputTypeOf, isUpload, looksLikeFile } from "./InputTypes.js"

export { looksLikeFile }

/** The stored summary: sorted, so equal capabilities give equal JSON (and hash). */
export const CapabilitySummary = Schema.Struct({
  node_classes: Schema.Array(Schema.String),
  /** `[node class, input name, index into file_lists]`, sorted. */
  model_inputs: Schema.Array(Schema.Tuple([Schema.String, Schema.String, Schema.Int])),
  file_lists: Schema.Array(Schema.Array(Schema.String)),
  /**
   * Typed widget inputs: `[node class, [[input name, index into input_types], ...]]`, sorted.
   * Absent from records stored before WES kept types: the runner's types are then unknown.
   */
  widgets: Schema.optional(Schema.Array(Schema.Tuple([Schema.String, Schema.Array(Schema.Tuple([Schema.String, Schema.Int]))]))),
  input_types: Schema.optional(Schema.Array(InputType)),
  /**
   * `[deprecated class, the loaded class the runner replaces it with]`, sorted; absent when none
   * (so summaries of runners without replacements hash as before).
   */
  node_replacements: Schema.optional(Schema.Array(Schema.Tuple([Schema.String, Schema.String])))
}).annotate({ identifier: "CapabilitySummary" })
export interface CapabilitySummary extends Schema.Schema.Type<typeof CapabilitySummary> {}

/** Input names of model loaders, whatever their options (a loader with no files installed lists none). */
const LOADER_NAME = /(^|_)name\d*$/

/** ComfyUI writes paths with the runner's separator; WES compares them with `/`. */
export const normalizePath = (file: string): string => file.replace(/\\/g, "/")

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** Distinct values, each stored once, in a stable order (by their JSON) with indexes renumbered to match. */
const interned = <A>() => {
  const byKey = new Map<string, number>()
  const values: Array<A> = []
  return {
    index: (value: A): number => {
      const key = JSON.stringify(value)
      let i = byKey.get(key)
      if (i === undefined) {
        i = values.length
        byKey.set(key, i)
        values.push(value)
      }
      return i
    },
    /** The values sorted, and the new index of each old one. */
    sorted: () => {
      const order = values.map((_, i) => i).sort((a, b) => compare(JSON.stringify(values[a]), JSON.stringify(values[b])))
      const renumber = new Map(order.map((old, i) => [old, i]))
      return { values: order.map((i) => values[i]!), renumber: (old: number) => renumber.get(old)! }
    }
  }
}

/** The file list of a loader input, or undefined when the input is not one. */
const fileListOf = (inputName: string, spec: unknown): ReadonlyArray<string> | undefined => {
  const combo = comboOf(spec)
  if (combo === undefined || isUpload(combo.config)) return undefined
  const options = combo.options.filter((o): o is string => typeof o === "string")
  if (!options.some(looksLikeFile) && !LOADER_NAME.test(inputName)) return undefined
  return [...new Set(options.map(normalizePath))].sort()
}

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
/**
 * `GET /node_replacements` (newer ComfyUI): for each deprecated node class, the classes that may
 * replace it, in the runner's order (it uses the first, when loaded, before validating a prompt).
 */
export type NodeReplacements = { readonly [oldClass: string]: ReadonlyArray<string> }

export const summarize = (objectInfo: unknown, replacements?: NodeReplacements): CapabilitySummary => {
  const summary = summarizeObjectInfo(objectInfo)
  const replaced = replacements === undefined ? [] : effectiveReplacements(new Set(summary.node_classes), replacements)
  return replaced.length === 0 ? summary : { ...summary, node_replacements: replaced }
}

const summarizeObjectInfo = (objectInfo: unknown): CapabilitySummary => {
  const classes: Array<string> = []
  const fileLists = interned<ReadonlyArray<string>>()
  const types = interned<InputType>()
  const inputs: Array<readonly [string, string, number]> = []
  const widgets: Array<readonly [string, Array<readonly [string, number]>]> = []
  if (!isObject(objectInfo)) return { node_classes: [], model_inputs: [], file_lists: [], widgets: [], input_types: [] }
  for (const [name, info] of Object.entries(objectInfo)) {
    classes.push(name)
    const typed: Array<readonly [string, number]> = []
    const input = isObject(info) && isObject(info["input"]) ? info["input"] : {}
    for (const section of ["required", "optional"]) {
      const specs = input[section]
      if (!isObject(specs)) continue
      for (const [inputName, spec] of Object.entries(specs)) {
        const files = fileListOf(inputName, spec)
        if (files !== undefined) inputs.push([name, inputName, fileLists.index(files)])
        const type = inputTypeOf(spec)
        if (type !== undefined) typed.push([inputName, types.index(type)])
      }
    }
    if (typed.length > 0) widgets.push([name, typed])
  }
  const lists = fileLists.sorted()
  const inputTypes = types.sorted()
  return {
    node_classes: classes.sort(compare),
    model_inputs: inputs.map(([c, i, l]) => [c, i, lists.renumber(l)] as const)
      .sort((a, b) => compare(a[0], b[0]) || compare(a[1], b[1])),
    file_lists: lists.values,
    widgets: widgets.map(([c, typed]) => [c, typed.map(([i, t]) => [i, inputTypes.renumber(t)] as const).sort((a, b) => compare(a[0], b[0]))] as const)
      .sort((a, b) => compare(a[0], b[0])),
    input_types: inputTypes.values
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

/** A runner's capabilities as stored. */
export const StoredCapabilities = Schema.Struct({
  runner_id: Schema.String,
  runner_kind: Schema.Literals(["user", "managed"]),
  summary: CapabilitySummary,
  /** SHA-256 of the summary's JSON. */
  hash: Schema.String,
  read_at: Timestamp
}).annotate({ identifier: "StoredCapabilities" })
export interface StoredCapabilities extends Schema.Schema.Type<typeof StoredCapabilities> {}
