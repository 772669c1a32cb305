/**
 * `POST /prompt` validation as ComfyUI does it (execution.py `validate_prompt` /
 * `validate_inputs`; comfyui-protocol.md section 2.3): the same error types, messages, details,
 * `extra_info`, `node_errors` and `dependent_outputs`, including the quirks.
 */
import type { FileStore } from "./Files.js"
import { inputConfig, NODES } from "./Nodes.js"
import type { InputSpec, NodeDef } from "./NodeTypes.js"
import { PyError, pyBool, pyFloat, pyFloatOf, pyInt, pyRepr, pyStr } from "./Python.js"

/** An `error` object / ErrorItem of the protocol. */
export interface PromptError {
  readonly type: string
  readonly message: string
  readonly details: string
  readonly extra_info: Record<string, unknown>
}

export interface NodeErrors {
  readonly errors: ReadonlyArray<PromptError>
  readonly dependent_outputs: Array<string>
  readonly class_type: string
}

export type ValidationResult =
  | { readonly ok: true; readonly outputs: ReadonlyArray<string>; readonly nodeErrors: Record<string, NodeErrors> }
  | { readonly ok: false; readonly error: PromptError; readonly nodeErrors: Record<string, NodeErrors> }

export interface ValidationOptions {
  /** `invalid_prompt` (0.3.64) or `missing_node_type` (newer) for unknown or missing class types. */
  readonly unknownNodeError: "invalid_prompt" | "missing_node_type"
  /** Whether a catalogue class is loaded (the fake's `objectInfo.nodes`). */
  readonly loaded: (nodeClass: string) => boolean
}

type Graph = Record<string, Record<string, unknown>>

interface Verdict {
  readonly valid: boolean
  readonly errors: ReadonlyArray<PromptError>
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/** `comfy_execution.validation.validate_node_input`: does an output type fit an input type? */
const fits = (received: string, input: unknown): boolean => {
  if (typeof input !== "string") return received === "*" || received === "COMBO"
  if (received === input || received === "*" || input === "*") return true
  const a = new Set(received.split(",").map((t) => t.trim()))
  return input.split(",").map((t) => t.trim()).some((t) => a.has(t))
}

const isLiteralSpec = (spec: InputSpec): spec is InputSpec & { readonly min?: number; readonly max?: number } =>
  spec.type === "INT" || spec.type === "FLOAT"

const formatNumber = (n: number, type: string): string => type === "FLOAT" ? pyFloat(n) : String(n)

const keyError = (key: unknown): PyError =>
  Array.isArray(key) || isObject(key)
    ? new PyError("TypeError", `unhashable type: '${Array.isArray(key) ? "list" : "dict"}'`)
    : new PyError("KeyError", pyRepr(key))

class Validator {
  readonly validated = new Map<string, Verdict>()

  constructor(private readonly prompt: Graph, private readonly files: FileStore) {}

  private node(id: unknown): Record<string, unknown> {
    if (typeof id !== "string" || !Object.hasOwn(this.prompt, id)) throw keyError(id)
    return this.prompt[id]!
  }

  async inputs(id: string, visiting: Array<string> = []): Promise<Verdict> {
    const known = this.validated.get(id)
    if (known !== undefined) return known
    if (visiting.includes(id)) return this.cycle(id, visiting)

    const node = this.node(id)
    if (!("inputs" in node)) throw new PyError("KeyError", "'inputs'")
    const inputs = node.inputs
    if (!isObject(inputs)) throw new PyError("TypeError", `list indices must be integers or slices, not str`)
    const def = NODES.get(pyStr(node.class_type))!
    const validateInputs = def.validate?.inputs ?? []
    const errors: Array<PromptError> = []
    let valid = true

    const specs: Array<[string, InputSpec, boolean]> = [
      ...Object.entries(def.required).map(([k, s]): [string, InputSpec, boolean] => [k, s, true]),
      ...Object.entries(def.optional ?? {}).map(([k, s]): [string, InputSpec, boolean] => [k, s, false])
    ]
    for (const [x, spec, required] of specs) {
      if (!(x in inputs)) {
        if (required) {
          errors.push({ type: "required_input_missing", message: "Required input is missing", details: x, extra_info: { input_name: x } })
        }
        continue
      }
      let val = inputs[x]
      const info = await inputConfig(spec, this.files)
      if (Array.isArray(val)) {
        if (val.length !== 2) {
          errors.push({
            type: "bad_linked_input",
            message: "Bad linked input, must be a length-2 list of [node_id, slot_index]",
            details: x,
            extra_info: { input_name: x, input_config: info, received_value: val }
          })
          continue
        }
        const [oId, slot] = val as [unknown, unknown]
        const source = this.node(oId)
        const returnTypes = NODES.get(pyStr(source.class_type))!.outputs
        if (typeof slot !== "number" || !Number.isInteger(slot)) {
          throw new PyError("TypeError", `tuple indices must be integers or slices, not ${typeof slot === "number" ? "float" : typeof slot === "string" ? "str" : "NoneType"}`)
        }
        if (slot >= returnTypes.length || slot < -returnTypes.length) throw new PyError("IndexError", "tuple index out of range")
        const receivedType = returnTypes[slot < 0 ? returnTypes.length + slot : slot]!
        if (!fits(receivedType, info[0])) {
          errors.push({
            type: "return_type_mismatch",
            message: "Return type mismatch between linked nodes",
            details: `${x}, received_type(${receivedType}) mismatch input_type(${pyStr(info[0])})`,
            extra_info: { input_name: x, input_config: info, received_type: receivedType, linked_node: val }
          })
          continue
        }
        try {
          visiting.push(id)
          let r: Verdict
          try {
            r = await this.inputs(oId as string, visiting)
          } finally {
            visiting.pop()
          }
          if (!r.valid) valid = false
        } catch (e) {
          if (!(e instanceof PyError)) throw e
          valid = false
          this.validated.set(oId as string, {
            valid: false,
            errors: [{
              type: "exception_during_inner_validation",
              message: "Exception when validating inner node",
              details: e.message,
              extra_info: {
                input_name: x,
                input_config: info,
                exception_message: e.message,
                exception_type: e.pyType,
                traceback: e.traceback("execution.py"),
                linked_node: val
              }
            }]
          })
        }
        continue
      }

      try {
        if (isObject(val) && "__value__" in val) {
          val = val.__value__
          inputs[x] = val
        }
        if (spec.type === "INT") val = pyInt(val)
        else if (spec.type === "FLOAT") val = pyFloatOf(val)
        else if (spec.type === "STRING") val = pyStr(val)
        else if (spec.type === "BOOLEAN") val = pyBool(val)
        inputs[x] = val
      } catch (e) {
        if (!(e instanceof PyError)) throw e
        errors.push({
          type: "invalid_input_type",
          message: `Failed to convert an input value to a ${spec.type} value`,
          details: `${x}, ${pyStr(val)}, ${e.message}`,
          extra_info: { input_name: x, input_config: info, received_value: val, exception_message: e.message }
        })
        continue
      }

      if (validateInputs.includes(x)) continue
      if (isLiteralSpec(spec) && typeof val === "number") {
        if (spec.min !== undefined && val < spec.min) {
          errors.push({
            type: "value_smaller_than_min",
            message: `Value ${formatNumber(val, spec.type)} smaller than min of ${formatNumber(spec.min, spec.type)}`,
            details: x,
            extra_info: { input_name: x, input_config: info, received_value: val }
          })
          continue
        }
        if (spec.max !== undefined && val > spec.max) {
          errors.push({
            type: "value_bigger_than_max",
            message: `Value ${formatNumber(val, spec.type)} bigger than max of ${formatNumber(spec.max, spec.type)}`,
            details: x,
            extra_info: { input_name: x, input_config: info, received_value: val }
          })
          continue
        }
      }
      if (Array.isArray(info[0])) {
        const options = info[0] as ReadonlyArray<unknown>
        if (!options.includes(val)) {
          const long = options.length > 20
          errors.push({
            type: "value_not_in_list",
            message: "Value not in list",
            details: `${x}: ${pyRepr(val)} not in ${long ? `(list of length ${options.length})` : pyRepr(options)}`,
            extra_info: { input_name: x, input_config: long ? null : info, received_value: val }
          })
          continue
        }
      }
    }

    if (def.validate !== undefined) errors.push(...await this.custom(def, inputs))

    const before = this.validated.get(id) ?? { valid: true, errors: [] }
    const verdict: Verdict = {
      valid: before.valid && valid && errors.length === 0,
      errors: [...before.errors, ...errors.filter((e) => !before.errors.includes(e))]
    }
    this.validated.set(id, verdict)
    return verdict
  }

  /** `VALIDATE_INPUTS`: linked inputs reach it as None; one error per input it received. */
  private async custom(def: NodeDef, inputs: Record<string, unknown>): Promise<Array<PromptError>> {
    const names = def.validate!.inputs.filter((x) => x in inputs)
    if (names.length === 0) {
      const missing = def.validate!.inputs
      throw new PyError(
        "TypeError",
        `${def.name}.VALIDATE_INPUTS() missing ${missing.length} required positional argument${missing.length === 1 ? "" : "s"}: ${missing.map((m) => `'${m}'`).join(", ")}`
      )
    }
    const values: Record<string, unknown> = {}
    for (const x of names) values[x] = Array.isArray(inputs[x]) ? null : inputs[x]
    const r = await def.validate!.check(values, this.files)
    if (r === true) return []
    return names.map((x) => ({
      type: "custom_validation_failed",
      message: "Custom validation failed for node",
      details: `${x} - ${r}`,
      extra_info: { input_name: x }
    }))
  }

  private cycle(id: string, visiting: ReadonlyArray<string>): Verdict {
    const path = [...visiting.slice(visiting.indexOf(id)), id]
    const nodes = [...new Set(path)]
    const details = path.map((n) => `${n} (${pyStr(this.prompt[n]?.class_type)})`).join(" -> ")
    for (const n of nodes) {
      this.validated.set(n, {
        valid: false,
        errors: [{ type: "dependency_cycle", message: "Dependency cycle detected", details, extra_info: { node_id: n, cycle_nodes: nodes } }]
      })
    }
    return this.validated.get(id)!
  }
}

const unknownNode = (
  options: ValidationOptions,
  id: string,
  node: unknown
): PromptError => {
  const title = isObject(node) && isObject(node._meta) && typeof node._meta.title === "string" ? node._meta.title : undefined
  const hasClass = isObject(node) && "class_type" in node
  if (options.unknownNodeError === "missing_node_type") {
    const classType = hasClass ? (node as Record<string, unknown>).class_type : null
    return {
      type: "missing_node_type",
      message: hasClass
        ? `Node '${title ?? pyStr(classType)}' not found. The custom node may not be installed.`
        : `Node '${title ?? `ID #${id}`}' has no class_type. The workflow may be corrupted or a custom node is missing.`,
      details: `Node ID '#${id}'`,
      extra_info: { node_id: id, class_type: classType, node_title: title ?? (hasClass ? pyStr(classType) : null) }
    }
  }
  return {
    type: "invalid_prompt",
    message: hasClass
      ? `Cannot execute because node ${pyStr((node as Record<string, unknown>).class_type)} does not exist.`
      : "Cannot execute because a node is missing the class_type property.",
    details: `Node ID '#${id}'`,
    extra_info: {}
  }
}

const targeted = (targets: unknown, id: string): boolean => {
  if (targets === null || targets === undefined) return true
  if (Array.isArray(targets)) return targets.includes(id)
  if (typeof targets === "string") return targets.includes(id)
  if (isObject(targets)) return id in targets
  return false
}

/**
 * Validates an API-format prompt in place (literal inputs are converted, as ComfyUI does) and
 * lists the outputs to execute. Throws a `PyError` for the shapes ComfyUI answers with 500.
 */
export const validatePrompt = async (
  prompt: unknown,
  partialTargets: unknown,
  files: FileStore,
  options: ValidationOptions
): Promise<ValidationResult> => {
  if (!isObject(prompt)) throw new PyError("AttributeError", `'${Array.isArray(prompt) ? "list" : "str"}' object has no attribute 'keys'`)
  const outputs: Array<string> = []
  for (const [id, node] of Object.entries(prompt)) {
    if (!isObject(node) || !("class_type" in node) || !NODES.has(pyStr(node.class_type)) || typeof node.class_type !== "string" ||
      !options.loaded(node.class_type)) {
      return { ok: false, error: unknownNode(options, id, node), nodeErrors: {} }
    }
    if (NODES.get(node.class_type)!.outputNode && targeted(partialTargets, id)) outputs.push(id)
  }
  if (outputs.length === 0) {
    return { ok: false, error: { type: "prompt_no_outputs", message: "Prompt has no outputs", details: "", extra_info: {} }, nodeErrors: {} }
  }

  const graph = prompt as Graph
  const v = new Validator(graph, files)
  const good: Array<string> = []
  const failures: Array<[string, ReadonlyArray<PromptError>]> = []
  const nodeErrors: Record<string, NodeErrors> = {}
  for (const o of outputs) {
    let verdict: Verdict
    try {
      verdict = await v.inputs(o)
    } catch (e) {
      if (!(e instanceof PyError)) throw e
      verdict = {
        valid: false,
        errors: [{
          type: "exception_during_validation",
          message: "Exception when validating node",
          details: e.message,
          extra_info: { exception_type: e.pyType, traceback: e.traceback("execution.py") }
        }]
      }
      v.validated.set(o, verdict)
    }
    if (verdict.valid) {
      good.push(o)
      continue
    }
    failures.push([o, verdict.errors])
    // As in ComfyUI, every failed node validated so far (not only this output's ancestors) gets `o`.
    for (const [id, result] of v.validated) {
      if (result.valid || result.errors.length === 0) continue
      const entry = nodeErrors[id] ??= { errors: result.errors, dependent_outputs: [], class_type: pyStr(graph[id]!.class_type) }
      entry.dependent_outputs.push(o)
    }
  }
  if (good.length === 0) {
    return {
      ok: false,
      error: {
        type: "prompt_outputs_failed_validation",
        message: "Prompt outputs failed validation",
        details: failures.flatMap(([, errors]) => errors.map((e) => `${e.message}: ${e.details}`)).join("\n"),
        extra_info: {}
      },
      nodeErrors
    }
  }
  return { ok: true, outputs: good, nodeErrors }
}
