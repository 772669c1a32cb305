/**
 * ComfyUI's HTTP answers (comfyui-protocol.md sections 2, 4, 5, 7) decoded with `effect/Schema`
 * into core's types. Decoding is lenient where ComfyUI versions differ (extra fields are ignored,
 * optional ones may be absent) and strict where the service depends on a field.
 */
import type { NodeReplacements, OutputFile, PromptHistory, PromptStatus, QueueSnapshot, RunnerInfo, UploadedInput } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/** A field that may be absent (or undefined), decoded as `value` then. */
const orDefault = <S extends Schema.Top>(schema: S, value: S["Type"]) => schema.pipe(Schema.withDecodingDefaultType(Effect.succeed(value)))

/** `GET /system_stats`, reduced; its devices are read one by one (an odd one is left out). */
export const SystemStats = Schema.Struct({
  system: Schema.Struct({ comfyui_version: Schema.optional(Schema.NullOr(Schema.String)) }),
  devices: orDefault(Schema.Array(Schema.Unknown), [])
})

/** A device of `/system_stats` (0.3.45 lists the one it uses; newer servers every one, that one first). */
const Device = Schema.Struct({
  name: Schema.String,
  type: Schema.String,
  index: orDefault(Schema.NullOr(Schema.Int), null),
  vram_total: orDefault(Schema.Number, 0)
})
const decodeDevice = Schema.decodeUnknownOption(Device)

/** What the probe found: the version and devices of `/system_stats`, and whether the jobs API answered. */
export const toRunnerInfo = (s: typeof SystemStats.Type, jobsApi: boolean): RunnerInfo => ({
  version: s.system.comfyui_version ?? null,
  devices: s.devices.flatMap((d) =>
    Option.match(decodeDevice(d), { onNone: () => [], onSome: ({ index, name, type, vram_total }) => [{ name, type, index, vram_total }] })),
  jobs_api: jobsApi
})

/** `GET /node_replacements` (newer ComfyUI): deprecated class -> its replacements (`NodeReplace.as_dict()`). */
export const NodeReplacementsAnswer = Schema.Record(Schema.String, Schema.Array(Schema.Unknown))

const Replacement = Schema.Struct({ new_node_id: Schema.String })
const decodeReplacement = Schema.decodeUnknownOption(Replacement)

/** Each deprecated class with the classes that replace it, in the runner's order (entries without a class are left out). */
export const toNodeReplacements = (answer: typeof NodeReplacementsAnswer.Type): NodeReplacements =>
  Object.fromEntries(Object.entries(answer).map(([old, entries]) =>
    [old, entries.flatMap((e) => Option.match(decodeReplacement(e), { onNone: () => [], onSome: (r) => [r.new_node_id] }))]))

/** `GET /object_info`: an object of node classes; their definitions are read by core's summary. */
export const ObjectInfoAnswer = Schema.Record(Schema.String, Schema.Unknown)

/** `POST /upload/image` answer. */
export const UploadAnswer = Schema.Struct({
  name: Schema.String,
  subfolder: orDefault(Schema.String, ""),
  type: orDefault(Schema.String, "input")
})

export const toUploadedInput = (u: typeof UploadAnswer.Type): UploadedInput => ({ name: u.name, subfolder: u.subfolder, type: u.type })

/** `[number, prompt_id, ...]`: the two leading elements of a queue item. */
const QueueItem = Schema.TupleWithRest(Schema.Tuple([Schema.Number, Schema.String]), [Schema.Unknown])

/** `GET /queue`. */
export const QueueAnswer = Schema.Struct({
  queue_running: Schema.Array(QueueItem),
  queue_pending: Schema.Array(QueueItem)
})

/** Running ids, and pending ids in execution order (priority number, then prompt_id). */
export const toQueueSnapshot = (q: typeof QueueAnswer.Type): QueueSnapshot => ({
  running: q.queue_running.map((i) => i[1]),
  pending: [...q.queue_pending]
    .sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map((i) => i[1])
})

/** `POST /prompt` 200 answer. */
export const PromptAccepted = Schema.Struct({
  prompt_id: Schema.String,
  number: Schema.Number,
  node_errors: Schema.optional(Schema.Unknown)
})

/** The `error` object of a 400 (older servers sent a bare string). */
const PromptErrorObject = Schema.Struct({
  type: Schema.String,
  message: Schema.String,
  details: Schema.optional(Schema.Unknown),
  extra_info: Schema.optional(Schema.Unknown)
})

/** `POST /prompt` 400 answer. */
export const PromptRefused = Schema.Struct({
  error: Schema.Union([PromptErrorObject, Schema.String]),
  node_errors: Schema.optional(Schema.Unknown)
})

const ErrorItem = Schema.Struct({
  message: Schema.String,
  details: Schema.optional(Schema.Unknown)
})

const NodeError = Schema.Struct({
  errors: Schema.Array(ErrorItem),
  class_type: Schema.optional(Schema.String)
})

const decodeNodeError = Schema.decodeUnknownOption(NodeError)

/** The per-node reasons of `node_errors`, in the runner's order; malformed entries are reported as such. */
export const nodeErrorLines = (nodeErrors: unknown): ReadonlyArray<{ readonly node: string; readonly line: string }> => {
  if (typeof nodeErrors !== "object" || nodeErrors === null || Array.isArray(nodeErrors)) return []
  return Object.entries(nodeErrors).flatMap(([node, raw]) => {
    const ne = decodeNodeError(raw)
    if (Option.isNone(ne)) return [{ node, line: `node ${node}: ${JSON.stringify(raw)}` }]
    const who = ne.value.class_type === undefined ? `node ${node}` : `node ${node} (${ne.value.class_type})`
    if (ne.value.errors.length === 0) return [{ node, line: `${who}: invalid` }]
    return ne.value.errors.map((e) => {
      const details = typeof e.details === "string" && e.details !== "" ? `: ${e.details}` : ""
      return { node, line: `${who}: ${e.message}${details}` }
    })
  })
}

/** Whether `node_errors` reports anything (`{}` and the old `[]` do not). */
export const hasNodeErrors = (nodeErrors: unknown): boolean =>
  typeof nodeErrors === "object" && nodeErrors !== null && Object.keys(nodeErrors).length > 0

const MESSAGE_LIMIT = 4000

const limit = (s: string): string => s.length > MESSAGE_LIMIT ? `${s.slice(0, MESSAGE_LIMIT)}…` : s

/** A 400 answer as PromptRejected fields: the error type, the runner's reasons, the first failing node. */
export const rejection = (
  refused: typeof PromptRefused.Type
): { readonly error_type: string; readonly message: string; readonly error_node: string | null } => {
  const lines = nodeErrorLines(refused.node_errors)
  if (typeof refused.error === "string") {
    const message = lines.length > 0 ? `${refused.error}: ${lines.map((l) => l.line).join("; ")}` : refused.error
    return { error_type: "prompt_rejected", message: limit(message), error_node: lines[0]?.node ?? null }
  }
  const e = refused.error
  const details = typeof e.details === "string" ? e.details.trim() : ""
  const message = lines.length > 0
    ? `${e.message}: ${lines.map((l) => l.line).join("; ")}`
    : details !== "" && details !== e.message ? `${e.message}: ${details.replace(/\n/g, "; ")}` : e.message
  // missing_node_type names the node in extra_info; invalid_prompt only in details ("Node ID '#5'").
  const info = e.extra_info
  const infoNode = typeof info === "object" && info !== null && "node_id" in info && typeof info.node_id === "string"
    ? info.node_id
    : undefined
  const detailsNode = /Node ID '#([^']+)'/.exec(details)?.[1]
  return { error_type: e.type, message: limit(message), error_node: lines[0]?.node ?? infoNode ?? detailsNode ?? null }
}

/** A 200 answer that still carries `node_errors`: some outputs were dropped, so the prompt is invalid. */
export const partialRejection = (
  nodeErrors: unknown
): { readonly error_type: string; readonly message: string; readonly error_node: string | null } => {
  const lines = nodeErrorLines(nodeErrors)
  return {
    error_type: "prompt_outputs_failed_validation",
    message: limit(`Some outputs failed validation: ${lines.map((l) => l.line).join("; ")}`),
    error_node: lines[0]?.node ?? null
  }
}

const HistoryStatus = Schema.Struct({
  status_str: Schema.optional(Schema.String),
  completed: Schema.optional(Schema.Boolean),
  messages: orDefault(Schema.Array(Schema.Tuple([Schema.String, Schema.Unknown])), [])
})

/** One history entry, reduced to what the service reads. */
export const HistoryEntry = Schema.Struct({
  outputs: orDefault(Schema.Record(Schema.String, Schema.Unknown), {}),
  status: Schema.optional(Schema.NullOr(HistoryStatus)),
  /** The queue item: `[number, prompt_id, prompt, extra_data, outputs_to_execute]`. */
  prompt: Schema.optional(Schema.Unknown)
})

/** The `class_type` of each node of the prompt a history entry stored, when it is there. */
const promptClasses = (item: unknown): Record<string, string> | undefined => {
  const graph = Array.isArray(item) ? item[2] : undefined
  if (typeof graph !== "object" || graph === null || Array.isArray(graph)) return undefined
  const classes: Record<string, string> = {}
  for (const [id, node] of Object.entries(graph as Record<string, unknown>)) {
    const type = typeof node === "object" && node !== null ? (node as { class_type?: unknown }).class_type : undefined
    if (typeof type === "string") classes[id] = type
  }
  return classes
}

/** `GET /history/{id}`: `{}` while unknown, pending or running. */
export const HistoryAnswer = Schema.Record(Schema.String, Schema.Unknown)

const Timestamped = Schema.Struct({ timestamp: Schema.optional(Schema.Number) })
const decodeTimestamped = Schema.decodeUnknownOption(Timestamped)

const ExecutionErrorData = Schema.Struct({
  node_id: Schema.optional(Schema.NullOr(Schema.Union([Schema.String, Schema.Number]))),
  exception_type: Schema.optional(Schema.String),
  exception_message: Schema.optional(Schema.String),
  timestamp: Schema.optional(Schema.Number)
})

const TERMINAL = new Set(["execution_success", "execution_error", "execution_interrupted"])

const isFileRecord = (u: unknown): u is { filename: string; type: string; subfolder?: unknown } =>
  typeof u === "object" && u !== null && typeof (u as { filename?: unknown }).filename === "string" &&
  typeof (u as { type?: unknown }).type === "string"

/** Every file record under any key of `ui`, a node's output (a value counts when it is a list of `{filename, type}` objects). */
export const nodeOutputFiles = (node: string, ui: unknown): Array<OutputFile> => {
  if (typeof ui !== "object" || ui === null || Array.isArray(ui)) return []
  return Object.values(ui).flatMap((value): Array<OutputFile> => {
    if (!Array.isArray(value) || value.length === 0 || !value.every(isFileRecord)) return []
    return value.map((f) => ({
      node_id: node,
      filename: f.filename,
      subfolder: typeof f.subfolder === "string" ? f.subfolder : "",
      type: f.type
    }))
  })
}

/** Every file record of a history's `outputs` (node id -> that node's output), in the object's key order. */
export const outputFiles = (outputs: Readonly<Record<string, unknown>>): ReadonlyArray<OutputFile> =>
  Object.entries(outputs).flatMap(([node, ui]) => nodeOutputFiles(node, ui))

/**
 * A history entry as PromptHistory: the outcome comes from the terminal message (which is the
 * ground truth even when `status_str` disagrees), error details from `execution_error`.
 */
export const toPromptHistory = (entry: typeof HistoryEntry.Type): PromptHistory => {
  const messages = entry.status?.messages ?? []
  const start = messages.find(([type]) => type === "execution_start")
  const terminal = [...messages].reverse().find(([type]) => TERMINAL.has(type))
  const timestamp = (data: unknown) => Option.match(decodeTimestamped(data), { onNone: () => null, onSome: (t) => t.timestamp ?? null })
  const classes = promptClasses(entry.prompt)
  const base = {
    outputs: outputFiles(entry.outputs),
    started_at: start === undefined ? null : timestamp(start[1]),
    completed_at: terminal === undefined ? null : timestamp(terminal[1]),
    ...(classes === undefined ? {} : { classes })
  }
  if (terminal === undefined) {
    // No terminal message (a status of null, or an unusual build): trust status_str.
    return entry.status?.status_str === "success"
      ? { ...base, outcome: "success", error: null }
      : {
        ...base,
        outcome: "error",
        error: {
          node_id: null,
          exception_type: "UnknownError",
          exception_message: "the runner recorded the prompt as failed without an execution_error message"
        }
      }
  }
  if (terminal[0] === "execution_success") return { ...base, outcome: "success", error: null }
  if (terminal[0] === "execution_interrupted") return { ...base, outcome: "interrupted", error: null }
  const data = Option.getOrUndefined(Schema.decodeUnknownOption(ExecutionErrorData)(terminal[1]))
  return {
    ...base,
    outcome: "error",
    error: {
      node_id: data?.node_id === undefined || data.node_id === null ? null : String(data.node_id),
      exception_type: data?.exception_type ?? "UnknownError",
      exception_message: (data?.exception_message ?? "").trim()
    }
  }
}

/** `GET /api/jobs` (newer ComfyUI): a page of jobs; its shape says the runner has the jobs API. */
export const JobsPage = Schema.Struct({
  jobs: Schema.Array(Schema.Unknown),
  pagination: Schema.Struct({ total: Schema.Number })
})

/** `GET /api/jobs/{id}` (comfy_execution/jobs.py `get_job`): one job, with the history's outputs and status once it ended. */
export const JobAnswer = Schema.Struct({
  id: Schema.String,
  status: Schema.Literals(["pending", "in_progress", "completed", "failed", "cancelled"]),
  outputs: orDefault(Schema.Record(Schema.String, Schema.Unknown), {}),
  execution_status: Schema.optional(Schema.NullOr(HistoryStatus)),
  /** The prompt as queued: `{prompt, extra_data}`. */
  workflow: Schema.optional(Schema.Struct({ prompt: Schema.optional(Schema.Unknown) }))
})

/** The 404 of `GET /api/jobs/{id}` for an id the runner does not know (a route it lacks answers 404 too, without it). */
export const JobNotFound = Schema.Struct({ error: Schema.Literal("Job not found") })

/** `POST /api/jobs/{id}/cancel`: whether a cancel was dispatched (false: finished, or unknown). */
export const JobCancelled = Schema.Struct({ cancelled: Schema.Boolean })

/** A job as a prompt's status: its end read like a history entry (the same outputs and status). */
export const jobStatus = (job: typeof JobAnswer.Type): PromptStatus => {
  switch (job.status) {
    case "pending":
      return { _tag: "Pending", position: null }
    case "in_progress":
      return { _tag: "Running" }
    default:
      // As a history entry: the graph sits where a queue item has it.
      return {
        _tag: "Finished",
        history: toPromptHistory({ outputs: job.outputs, status: job.execution_status, prompt: [null, job.id, job.workflow?.prompt] })
      }
  }
}
