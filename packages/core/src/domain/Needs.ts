/**
 * What a workflow needs from a runner, and what a runner lacks of it. Needs come from the graph
 * after parameter substitution (so a `#choice` or `$text` that picks a checkpoint is checked with
 * the value chosen): every `class_type`, and every input value that names a file. A file counts
 * only where the runner lists files for that input (a loader's combo); elsewhere (a LoadImage
 * upload, a text) it is not a model. Text and choice values must also convert to the type of
 * each input they fill (TypedParams.ts). A deprecated class the runner replaces itself before
 * validating (`GET /node_replacements`) is not missing; its inputs are renamed by the replacement,
 * so its files are left to the runner. The graph is one level of nodes and one of inputs: two
 * plain loops, no recursion.
 */
import * as Result from "effect/Result"
import { isJsonObject, type JsonObject } from "./Json.js"
import { findPlaceholders, substitute } from "./Placeholders.js"
import { looksLikeFile } from "./InputTypes.js"
import { type CapabilitySummary, normalizePath } from "./Summary.js"
import { indexInputTypes, type InputTypeIndex, mismatchesOn, type ParamMismatch, type ParamUse, paramUses } from "./TypedParams.js"

/** A file named in a node input. */
export interface ModelNeed {
  readonly node_class: string
  readonly input: string
  readonly file: string
}

export interface Needs {
  /** Sorted, distinct. */
  readonly node_classes: ReadonlyArray<string>
  readonly model_files: ReadonlyArray<ModelNeed>
  /** The inputs text and choice values fill, each to be converted to that input's type. */
  readonly params: ReadonlyArray<ParamUse>
}

/** What one runner lacks; all empty: it can run the workflow. */
export interface Missing {
  readonly node_classes: ReadonlyArray<string>
  readonly model_files: ReadonlyArray<ModelNeed>
  /** Values that do not convert to what their input takes there. */
  readonly params: ReadonlyArray<ParamMismatch>
}

/** The needs of an API-format graph (placeholders already substituted where they have values). */
export const workflowNeeds = (graph: JsonObject): Needs => {
  const classes = new Set<string>()
  const files = new Map<string, ModelNeed>()
  for (const node of Object.values(graph)) {
    if (!isJsonObject(node) || typeof node["class_type"] !== "string") continue
    const nodeClass = node["class_type"]
    classes.add(nodeClass)
    if (!isJsonObject(node["inputs"])) continue
    for (const [input, value] of Object.entries(node["inputs"])) {
      if (typeof value !== "string" || !looksLikeFile(value)) continue
      const need = { node_class: nodeClass, input, file: normalizePath(value) }
      files.set(JSON.stringify(need), need)
    }
  }
  return { node_classes: [...classes].sort(), model_files: [...files.values()], params: [] }
}

/**
 * The needs of a stored workflow: its graph with the text and choice values of
 * `workflow_params` (`[placeholderKey, value]`) substituted. File parameters are uploads, not
 * models, and keep their placeholder.
 */
export const needsOf = (graph: JsonObject, params: ReadonlyArray<readonly [string, string]>): Needs => {
  const placeholders = Result.getOrElse(findPlaceholders(graph), () => [])
  const values = new Map(params.filter(([key]) => !key.startsWith("$file(")))
  if (values.size === 0) return workflowNeeds(graph)
  return { ...workflowNeeds(substitute(graph, placeholders, values)), params: paramUses(graph, placeholders, values) }
}

/** A summary compiled for lookups (built once per cached summary). */
export interface CapabilityIndex {
  readonly classes: ReadonlySet<string>
  /** Deprecated classes the runner replaces with a loaded one. */
  readonly replaced: ReadonlySet<string>
  /** `class \0 input` -> the files that input offers. */
  readonly files: ReadonlyMap<string, ReadonlySet<string>>
  /** Its widget inputs' types; undefined for a record stored before WES kept them. */
  readonly types: InputTypeIndex | undefined
}

const inputKey = (nodeClass: string, input: string) => `${nodeClass}\u0000${input}`

export const indexSummary = (s: CapabilitySummary): CapabilityIndex => ({
  classes: new Set(s.node_classes),
  replaced: new Set((s.node_replacements ?? []).map(([old]) => old)),
  files: new Map(s.model_inputs.map(([c, i, l]) => [inputKey(c, i), new Set(s.file_lists[l] ?? [])])),
  types: indexInputTypes(s)
})

/**
 * What `index` lacks of `needs` (undefined: a runner whose capabilities are not known, which
 * lacks nothing but values that do not convert to their placeholder's inferred type). A file is
 * checked only against an input the runner lists files for.
 */
export const missingOn = (index: CapabilityIndex | undefined, needs: Needs): Missing =>
  index === undefined
    ? { node_classes: [], model_files: [], params: mismatchesOn(undefined, needs.params) }
    : {
      node_classes: needs.node_classes.filter((c) => !index.classes.has(c) && !index.replaced.has(c)),
      model_files: needs.model_files.filter((m) => {
        const offered = index.files.get(inputKey(m.node_class, m.input))
        return index.classes.has(m.node_class) && offered !== undefined && !offered.has(m.file)
      }),
      params: mismatchesOn(index.types, needs.params)
    }

export const lacksNothing = (m: Missing): boolean => m.node_classes.length === 0 && m.model_files.length === 0 && m.params.length === 0

/** Whether all a runner lacks is values that do not convert (it has every node and model). */
export const lacksOnlyParams = (m: Missing): boolean => m.node_classes.length === 0 && m.model_files.length === 0 && m.params.length > 0

/** `node classes A, B; model files x.safetensors (CheckpointLoaderSimple.ckpt_name)`. */
export const describeMissing = (m: Missing): string =>
  [
    m.node_classes.length === 0 ? undefined : `node class${m.node_classes.length === 1 ? "" : "es"} ${m.node_classes.join(", ")}`,
    m.model_files.length === 0
      ? undefined
      : `model file${m.model_files.length === 1 ? "" : "s"} ${m.model_files.map((f) => `${f.file} (${f.node_class}.${f.input})`).join(", ")}`
  ].filter((s) => s !== undefined).join("; ")
