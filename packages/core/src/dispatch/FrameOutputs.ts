/**
 * Images a node sends as WebSocket frames instead of writing files: ComfyUI's bundled
 * `SaveImageWebsocket`, and custom nodes that send their results the same way. ComfyUI sends a
 * sampler's preview and such an image in the same binary frame, so the node that sent a frame
 * decides (docs/decisions.md, "Outputs sent over the WebSocket"):
 *
 * - a frame of a `SaveImageWebsocket` node is an output;
 * - a frame of a node that no other node of the prompt takes an input from (an output node: ComfyUI
 *   runs no other sink) is an output when that node lists no file of its own;
 * - every other frame (samplers, decoders: nodes whose results feed others) is a preview: never
 *   kept, only shown live to subscribers that asked for previews (`isPreview`, LivePreviews.ts).
 *
 * The images are kept with the run as it is seen (SeenRun.ts), at most `FRAME_OUTPUT_LIMIT` bytes
 * per prompt, and stored with the end like the files copied from the runner.
 */
import type { JsonObject } from "../domain/Json.js"
import { isJsonObject } from "../domain/Json.js"

/** ComfyUI's node that saves images through the socket (custom_nodes/websocket_image_save.py). */
export const SAVE_IMAGE_WEBSOCKET = "SaveImageWebsocket"

/** Bytes of frame images kept for one prompt; a run that sends more fails with `OutputTooLarge`. */
export const FRAME_OUTPUT_LIMIT = 256 * 1024 * 1024

/** The nodes of a prompt whose image frames may be outputs. */
export interface FrameNodes {
  /** `SaveImageWebsocket` nodes: each of their frames is an output. */
  readonly saving: ReadonlySet<string>
  /** Nodes whose outputs no other node takes: their frames are outputs unless they list files. */
  readonly sinks: ReadonlySet<string>
}

/** An image a node sent as a frame, kept for the end. */
export interface FrameImage {
  readonly node: string
  readonly image_type: string
  readonly image: Uint8Array
}

/** The images a run sent as frames, when the socket showed all of them. */
export interface SeenFrames {
  readonly images: ReadonlyArray<FrameImage>
  /** More than `FRAME_OUTPUT_LIMIT` bytes were sent: the rest was not kept. */
  readonly overLimit: boolean
}

const isLink = (v: unknown): v is readonly [string, number] =>
  Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "number"

/** The frame-sending nodes of a workflow in ComfyUI API format (node id -> `{class_type, inputs}`). */
export const frameNodesOf = (graph: JsonObject): FrameNodes => {
  const saving = new Set<string>()
  const linked = new Set<string>()
  for (const [id, node] of Object.entries(graph)) {
    if (!isJsonObject(node)) continue
    if (node["class_type"] === SAVE_IMAGE_WEBSOCKET) saving.add(id)
    const inputs = node["inputs"]
    if (isJsonObject(inputs)) for (const v of Object.values(inputs)) if (isLink(v)) linked.add(v[0])
  }
  return { saving, sinks: new Set(Object.keys(graph).filter((id) => !linked.has(id))) }
}

/** Whether a frame of `node` may be an output (so its image is kept until the node's end says). */
export const mayBeOutput = (nodes: FrameNodes, node: string): boolean => nodes.saving.has(node) || nodes.sinks.has(node)

/**
 * Whether a frame of `node` is a preview to show live: one no rule may keep as an output. With
 * the graph unknown (a prompt inherited from another instance) or the node unnamed, every frame is
 * shown: it is what the running node sent.
 */
export const isPreview = (nodes: FrameNodes | undefined, node: string | null): boolean =>
  nodes === undefined || node === null || !mayBeOutput(nodes, node)

const EXTENSIONS: Readonly<Record<string, string>> = { "image/png": "png", "image/jpeg": "jpg", "image/webp": "webp" }

/** The name a frame image is stored under: `websocket_<node>_<00001>_.png`, numbered per node from 1. */
export const frameFilename = (node: string, index: number, imageType: string): string =>
  `websocket_${node.replace(/[^A-Za-z0-9_-]/g, "_")}_${String(index).padStart(5, "0")}_.${EXTENSIONS[imageType] ?? "bin"}`
