/**
 * Newer ComfyUI's node replacements (app/node_replace_manager.py), for a fake started with
 * `nodeReplacements`: `GET /node_replacements` lists them (`NodeReplace.as_dict()` per deprecated
 * class), and `POST /prompt` rewrites a deprecated class it has not loaded into its first
 * replacement, when that one is loaded, before validating: inputs by `input_mapping` (an old
 * input, or a set value), and the links of later nodes by `output_mapping`.
 */
import { PyError } from "./Python.js"

/** One registration (`io.NodeReplace`), as a custom node or ComfyUI itself makes it. */
export interface NodeReplace {
  readonly new_node_id: string
  readonly old_node_id: string
  readonly old_widget_ids?: ReadonlyArray<string>
  readonly input_mapping?: ReadonlyArray<{ readonly new_id: string; readonly old_id: string } | { readonly new_id: string; readonly set_value: unknown }>
  readonly output_mapping?: ReadonlyArray<{ readonly new_idx: number; readonly old_idx: number }>
}

/** `NodeReplaceManager.register` for each (a repeated old/new pair is ignored), grouped by deprecated class. */
export const registered = (replacements: ReadonlyArray<NodeReplace>): ReadonlyMap<string, ReadonlyArray<NodeReplace>> => {
  const byOld = new Map<string, Array<NodeReplace>>()
  for (const r of replacements) {
    const list = byOld.get(r.old_node_id) ?? []
    if (!list.some((e) => e.new_node_id === r.new_node_id)) list.push(r)
    byOld.set(r.old_node_id, list)
  }
  return byOld
}

/** The answer of `GET /node_replacements`. */
export const replacementsAnswer = (byOld: ReadonlyMap<string, ReadonlyArray<NodeReplace>>): Record<string, unknown> =>
  Object.fromEntries([...byOld].map(([old, list]) => [old, list.map((r) => ({
    new_node_id: r.new_node_id,
    old_node_id: r.old_node_id,
    old_widget_ids: r.old_widget_ids ?? null,
    input_mapping: r.input_mapping !== undefined && r.input_mapping.length > 0 ? r.input_mapping : null,
    output_mapping: r.output_mapping !== undefined && r.output_mapping.length > 0 ? r.output_mapping : null
  }))]))

type Node = { class_type: string; inputs: Record<string, unknown>; _meta?: unknown }
const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)
const isLink = (v: unknown): v is [string, number] => Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && Number.isInteger(v[1])

/** `apply_replacements`, in place on the prompt. */
export const applyReplacements = (
  prompt: unknown,
  byOld: ReadonlyMap<string, ReadonlyArray<NodeReplace>>,
  loaded: (nodeClass: string) => boolean
): void => {
  if (!isObject(prompt)) throw new PyError("AttributeError", "'list' object has no attribute 'items'")
  const links = new Map<string, Array<readonly [node: string, input: string, output: number]>>()
  const replace: Array<string> = []
  for (const [id, node] of Object.entries(prompt)) {
    if (!isObject(node) || typeof node["class_type"] !== "string" || !isObject(node["inputs"])) continue
    if (!loaded(node["class_type"]) && byOld.has(node["class_type"])) replace.push(id)
    for (const [input, value] of Object.entries(node["inputs"])) {
      if (isLink(value)) links.set(value[0], [...(links.get(value[0]) ?? []), [id, input, value[1]] as const])
    }
  }
  for (const id of replace) {
    const old = prompt[id] as Node
    const r = byOld.get(old.class_type)![0]!
    if (!loaded(r.new_node_id)) continue
    const inputs: Record<string, unknown> = {}
    for (const m of r.input_mapping ?? []) {
      if ("set_value" in m) inputs[m.new_id] = m.set_value
      else if (!Object.hasOwn(old.inputs, m.old_id)) throw new PyError("KeyError", `'${m.old_id}'`)
      else inputs[m.new_id] = old.inputs[m.old_id]
    }
    prompt[id] = { ...old, class_type: r.new_node_id, inputs, _meta: isObject(old._meta) ? { ...old._meta } : {} }
    for (const [to, input, output] of links.get(id) ?? []) {
      for (const m of r.output_mapping ?? []) {
        if (m.old_idx === output) ((prompt[to] as Node).inputs[input] as [string, number])[1] = m.new_idx
      }
    }
  }
}
