/**
 * ComfyUI's WebSocket frames (comfyui-protocol.md sections 6.3 and 6.4) decoded with
 * `effect/Schema` into `RunnerEvent`s: the JSON messages of 0.3.x and later (`progress_state` and
 * `execution_cached` included) and the binary image frames (type 1, and type 4 with its JSON
 * metadata). Unknown types (custom nodes, `logs`, `feature_flags`, ...) are ignored; extra fields
 * are tolerated, since newer servers add some (`activity` in `progress_state`, `metadata` on files).
 */
import type { RunnerEvent } from "@wes/core"
import * as Effect from "effect/Effect"
import * as Result from "effect/Result"
import * as Schema from "effect/Schema"
import * as SchemaTransformation from "effect/SchemaTransformation"
import { nodeOutputFiles } from "./ComfyResponses.js"
import { fastMessage } from "./FrameFastPath.js"

const NodeId = Schema.Union([Schema.String, Schema.Number]).pipe(
  Schema.decodeTo(Schema.String, SchemaTransformation.transform<string, string | number>({ decode: String, encode: (id) => id }))
)
/** A field that may be absent (or undefined), decoded as `value` then. */
const orDefault = <S extends Schema.Top>(schema: S, value: S["Type"]) => schema.pipe(Schema.withDecodingDefaultType(Effect.succeed(value)))
const Timestamp = orDefault(Schema.NullOr(Schema.Number), null)

const message = <T extends string, F extends Schema.Struct.Fields>(type: T, data: F) =>
  Schema.Struct({ type: Schema.Literal(type), data: Schema.Struct(data) })

const Status = message("status", {
  status: Schema.Struct({ exec_info: Schema.Struct({ queue_remaining: Schema.Number }) })
})
const ExecutionStart = message("execution_start", { prompt_id: Schema.String, timestamp: Timestamp })
const ExecutionCached = message("execution_cached", { prompt_id: Schema.String, nodes: Schema.Array(NodeId) })
const NodeState = Schema.Struct({
  state: Schema.Literals(["pending", "running", "finished", "error"]),
  value: Schema.Number,
  max: Schema.Number
})
const ProgressState = message("progress_state", {
  prompt_id: Schema.String,
  nodes: Schema.Record(Schema.String, NodeState)
})
const Executing = message("executing", {
  node: Schema.NullOr(NodeId),
  prompt_id: orDefault(Schema.NullOr(Schema.String), null)
})
const Progress = message("progress", {
  value: Schema.Number,
  max: Schema.Number,
  prompt_id: orDefault(Schema.NullOr(Schema.String), null),
  node: orDefault(Schema.NullOr(NodeId), null)
})
const Executed = message("executed", { node: NodeId, output: Schema.optional(Schema.Unknown), prompt_id: Schema.String })
const ExecutionSuccess = message("execution_success", { prompt_id: Schema.String, timestamp: Timestamp })
const ExecutionError = message("execution_error", {
  prompt_id: Schema.String,
  node_id: orDefault(Schema.NullOr(NodeId), null),
  node_type: orDefault(Schema.NullOr(Schema.String), null),
  exception_type: orDefault(Schema.String, "UnknownError"),
  exception_message: orDefault(Schema.String, ""),
  timestamp: Timestamp
})
const ExecutionInterrupted = message("execution_interrupted", { prompt_id: Schema.String, timestamp: Timestamp })

/** The messages the service acts on. */
export const RunnerMessage = Schema.Union([Status,
  ExecutionStart,
  ExecutionCached,
  ProgressState,
  Executing,
  Progress,
  Executed,
  ExecutionSuccess,
  ExecutionError,
  ExecutionInterrupted])
export type RunnerMessage = typeof RunnerMessage.Type

const KNOWN = new Set(["status", "execution_start", "execution_cached", "progress_state", "executing", "progress", "executed", "execution_success", "execution_error", "execution_interrupted"])

/** A message as a `RunnerEvent`; undefined for the ones that carry nothing for the service. */
export const toRunnerEvent = (m: RunnerMessage): RunnerEvent | undefined => {
  switch (m.type) {
    case "status":
      return { _tag: "QueueChanged", queue_remaining: m.data.status.exec_info.queue_remaining }
    case "execution_start":
      return { _tag: "ExecutionStart", prompt_id: m.data.prompt_id, timestamp: m.data.timestamp }
    case "execution_cached":
      return { _tag: "ExecutionCached", prompt_id: m.data.prompt_id, nodes: m.data.nodes }
    case "progress_state":
      return {
        _tag: "ProgressState",
        prompt_id: m.data.prompt_id,
        nodes: Object.entries(m.data.nodes).map(([node, n]) => ({ node, state: n.state, value: n.value, max: n.max }))
      }
    case "executing":
      if (m.data.node !== null) return { _tag: "Executing", prompt_id: m.data.prompt_id, node: m.data.node }
      // `executing {node: null}` after the history write; very old servers sent it without prompt_id.
      return m.data.prompt_id === null ? undefined : { _tag: "PromptDone", prompt_id: m.data.prompt_id }
    case "progress":
      return { _tag: "Progress", prompt_id: m.data.prompt_id, node: m.data.node, value: m.data.value, max: m.data.max }
    case "executed":
      return {
        _tag: "Executed",
        prompt_id: m.data.prompt_id,
        node: m.data.node,
        output: m.data.output ?? null,
        files: nodeOutputFiles(m.data.node, m.data.output)
      }
    case "execution_success":
      return { _tag: "ExecutionSuccess", prompt_id: m.data.prompt_id, timestamp: m.data.timestamp }
    case "execution_error":
      return {
        _tag: "ExecutionError",
        prompt_id: m.data.prompt_id,
        node_id: m.data.node_id,
        node_type: m.data.node_type,
        exception_type: m.data.exception_type,
        exception_message: m.data.exception_message.trim(),
        timestamp: m.data.timestamp
      }
    case "execution_interrupted":
      return { _tag: "ExecutionInterrupted", prompt_id: m.data.prompt_id, timestamp: m.data.timestamp }
  }
}

/** What a text frame is to the service. */
export type Decoded =
  | { readonly _tag: "Event"; readonly event: RunnerEvent }
  | { readonly _tag: "Ignored" }
  | { readonly _tag: "Malformed"; readonly reason: string }

const decodeMessage = Schema.decodeUnknownResult(RunnerMessage)

/** A parsed message of a known `type`, through the schema. */
const bySchema = (json: unknown, type: string): Decoded =>
  Result.match(decodeMessage(json), {
    onFailure: (e) => ({ _tag: "Malformed", reason: `${type}: ${e.message}` }),
    onSuccess: (m) => {
      const event = toRunnerEvent(m)
      return event === undefined ? { _tag: "Ignored" } : { _tag: "Event", event }
    }
  })

/** Decodes one text frame of a known type with the schema alone (what the fast path must agree with: tests). */
export const decodeFrameBySchema = (text: string): Decoded => {
  const json: unknown = JSON.parse(text)
  return bySchema(json, String((json as { type?: unknown }).type))
}

/** Decodes one text frame: an event, a message to ignore (unknown type), or a malformed one. */
export const decodeFrame = (text: string): Decoded => {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return { _tag: "Malformed", reason: "not JSON" }
  }
  const type = typeof json === "object" && json !== null ? (json as { type?: unknown }).type : undefined
  if (typeof type !== "string") return { _tag: "Malformed", reason: "no string `type`" }
  if (!KNOWN.has(type)) return { _tag: "Ignored" }
  const fast = fastMessage(type, json as Record<string, unknown>)
  if (fast === undefined) return bySchema(json, type)
  const event = toRunnerEvent(fast)
  return event === undefined ? { _tag: "Ignored" } : { _tag: "Event", event }
}

const PreviewMetadata = Schema.fromJsonString(Schema.Struct({
  prompt_id: orDefault(Schema.NullOr(Schema.String), null),
  node_id: orDefault(Schema.NullOr(NodeId), null),
  image_type: orDefault(Schema.String, "image/png")
}))
const decodePreviewMetadata = Schema.decodeUnknownResult(PreviewMetadata)

/** Binary event types (protocol.py `BinaryEventTypes`): 1 preview, 3 text, 4 preview with metadata. */
const PREVIEW_IMAGE = 1
const PREVIEW_IMAGE_WITH_METADATA = 4

/**
 * Decodes one binary frame (uint32 BE event type, then its payload): images (a sampler's preview
 * or a `SaveImageWebsocket` image, sent alike) become `ImageFrame` events holding their bytes (a
 * view into the frame, not a copy); other types (3, text of API nodes; custom types) are ignored.
 * A type 1 frame names neither prompt nor node: `attributeImages` fills them in.
 */
export const decodeBinaryFrame = (frame: Uint8Array): Decoded => {
  if (frame.length < 8) return { _tag: "Malformed", reason: `binary frame of ${frame.length} bytes` }
  const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength)
  const type = view.getUint32(0)
  if (type === PREVIEW_IMAGE) {
    const format = view.getUint32(4)
    const image_type = format === 2 ? "image/png" : format === 1 ? "image/jpeg" : "application/octet-stream"
    return { _tag: "Event", event: { _tag: "ImageFrame", prompt_id: null, node: null, image_type, image: frame.subarray(8) } }
  }
  if (type !== PREVIEW_IMAGE_WITH_METADATA) return { _tag: "Ignored" }
  const length = view.getUint32(4)
  if (8 + length > frame.length) return { _tag: "Malformed", reason: `preview metadata of ${length} bytes in a frame of ${frame.length}` }
  const json = new TextDecoder().decode(frame.subarray(8, 8 + length))
  return Result.match(decodePreviewMetadata(json), {
    onFailure: (e) => ({ _tag: "Malformed", reason: `preview metadata: ${e.message}` }),
    onSuccess: (m) => ({
      _tag: "Event",
      event: { _tag: "ImageFrame", prompt_id: m.prompt_id, node: m.node_id, image_type: m.image_type, image: frame.subarray(8 + length) }
    })
  })
}

/**
 * Fills in the prompt and node of image frames that do not name them (type 1, or type 4 from a
 * node running outside an execution context): ComfyUI sends every message of a prompt through one
 * queue, so a node's frames come between its `executing` message and the next one. One per
 * connection (a new socket starts knowing nothing); events pass through in order.
 */
export const attributeImages = (): (event: RunnerEvent) => RunnerEvent => {
  let current: { readonly prompt_id: string | null; readonly node: string } | undefined
  return (event) => {
    switch (event._tag) {
      case "Executing":
        current = { prompt_id: event.prompt_id, node: event.node }
        return event
      case "ExecutionStart":
      case "ExecutionSuccess":
      case "ExecutionError":
      case "ExecutionInterrupted":
      case "PromptDone":
        current = undefined
        return event
      case "ImageFrame":
        if (current === undefined || (event.prompt_id !== null && event.node !== null)) return event
        return { ...event, prompt_id: event.prompt_id ?? current.prompt_id, node: event.node ?? current.node }
      default:
        return event
    }
  }
}

/** The first message a client sends: announces that it reads type 4 previews (prompt and node named). */
export const FEATURE_FLAGS_MESSAGE = JSON.stringify({ type: "feature_flags", data: { supports_preview_metadata: true } })
