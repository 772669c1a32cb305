/**
 * The messages a running prompt sends most (`executing`, `progress_state`, `progress`, `executed`,
 * `status`, `execution_start`, `execution_cached`, `execution_success`: a dozen per prompt),
 * checked and copied field by field instead of through the schema's decoder, which cost about
 * 3 µs per message over `JSON.parse`. `RunnerMessage` (RunnerMessages.ts) stays the definition:
 * a message this path does not take as it is (a field missing or of another type, a rarer type)
 * goes through the decoder, which reads it or says what is wrong with it; a test holds the two
 * paths equal on the recorded frames of a real ComfyUI and on variations of them.
 */
import type { RunnerMessage } from "./RunnerMessages.js"

type Fields = Record<string, unknown>

const isFields = (u: unknown): u is Fields => typeof u === "object" && u !== null && !Array.isArray(u)

/** A node id as the schema reads it (a number becomes its string), or undefined. */
const nodeId = (u: unknown): string | undefined => (typeof u === "string" ? u : typeof u === "number" ? String(u) : undefined)

/** An optional nullable field: its value, null when absent, or undefined when of another type. */
const optional = <A>(data: Fields, key: string, read: (u: unknown) => A | undefined): A | null | undefined => {
  if (!(key in data)) return null
  const v = data[key]
  return v === null ? null : read(v)
}

const string = (u: unknown) => (typeof u === "string" ? u : undefined)
const number = (u: unknown) => (typeof u === "number" ? u : undefined)

const STATES = new Set(["pending", "running", "finished", "error"])

type NodeStates = Extract<RunnerMessage, { type: "progress_state" }>["data"]["nodes"]

const nodeStates = (u: unknown): NodeStates | undefined => {
  if (!isFields(u)) return undefined
  const out: Record<string, NodeStates[string]> = {}
  for (const key of Object.keys(u)) {
    const n = u[key]
    if (!isFields(n) || typeof n["state"] !== "string" || !STATES.has(n["state"])) return undefined
    if (typeof n["value"] !== "number" || typeof n["max"] !== "number") return undefined
    out[key] = { state: n["state"] as NodeStates[string]["state"], value: n["value"], max: n["max"] }
  }
  return out
}

/** `message` (parsed JSON with a string `type`) as the schema would decode it, or undefined to let the schema decide. */
export const fastMessage = (type: string, message: Fields): RunnerMessage | undefined => {
  const data = message["data"]
  if (!isFields(data)) return undefined
  const promptId = string(data["prompt_id"])
  switch (type) {
    case "executing": {
      const node = data["node"] === null ? null : nodeId(data["node"])
      const prompt = optional(data, "prompt_id", string)
      return node === undefined || prompt === undefined ? undefined : { type, data: { node, prompt_id: prompt } }
    }
    case "progress_state": {
      const nodes = nodeStates(data["nodes"])
      return promptId === undefined || nodes === undefined ? undefined : { type, data: { prompt_id: promptId, nodes } }
    }
    case "progress": {
      const value = number(data["value"])
      const max = number(data["max"])
      const prompt = optional(data, "prompt_id", string)
      const node = optional(data, "node", nodeId)
      if (value === undefined || max === undefined || prompt === undefined || node === undefined) return undefined
      return { type, data: { value, max, prompt_id: prompt, node } }
    }
    case "executed": {
      const node = nodeId(data["node"])
      if (node === undefined || promptId === undefined) return undefined
      return { type, data: "output" in data ? { node, output: data["output"], prompt_id: promptId } : { node, prompt_id: promptId } }
    }
    case "status": {
      const status = data["status"]
      const info = isFields(status) ? status["exec_info"] : undefined
      const remaining = isFields(info) ? number(info["queue_remaining"]) : undefined
      return remaining === undefined ? undefined : { type, data: { status: { exec_info: { queue_remaining: remaining } } } }
    }
    case "execution_start":
    case "execution_success": {
      const timestamp = optional(data, "timestamp", number)
      return promptId === undefined || timestamp === undefined ? undefined : { type, data: { prompt_id: promptId, timestamp } }
    }
    case "execution_cached": {
      const nodes = data["nodes"]
      if (promptId === undefined || !Array.isArray(nodes)) return undefined
      const ids: Array<string> = []
      for (const n of nodes) {
        const id = nodeId(n)
        if (id === undefined) return undefined
        ids.push(id)
      }
      return { type, data: { prompt_id: promptId, nodes: ids } }
    }
    default:
      return undefined
  }
}
