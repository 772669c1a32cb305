/** Decoding of ComfyUI's answers and WebSocket frames, on shapes the fake does not produce. */
import type { RunnerTarget } from "@wes/core"
import {
  attributeImages,
  decodeBinaryFrame,
  decodeFrame,
  outputContentType,
  outputFiles,
  toPromptHistory,
  toQueueSnapshot,
  websocketUrl
} from "@wes/runner-client"
import { describe, expect, it } from "vitest"
import * as Schema from "effect/Schema"
import { HistoryEntry, rejection } from "../src/ComfyResponses.js"

const runner = (endpoint: string): RunnerTarget => ({
  kind: "user", id: "r", name: "r", endpoint, headers: {}, tags: [], status: "active"
})

describe("history decoding", () => {
  it("takes files from every output key whose value is a list of {filename, type} records", () => {
    expect(outputFiles({
      "9": {
        images: [{ filename: "a.png", subfolder: "s", type: "output" }],
        animated: [true],
        text: ["hello"],
        gifs: [{ filename: "v.mp4", subfolder: "", type: "output", format: "video/h264-mp4", frame_rate: 8 }],
        audio: [{ filename: "a.flac", type: "output" }],
        result: ["model.glb", { camera: 1 }],
        mixed: [{ filename: "x.png", type: "output" }, "not a file"]
      },
      "10": { text: ["only text"] },
      "11": "not an object"
    })).toEqual([
      { node_id: "9", filename: "a.png", subfolder: "s", type: "output" },
      { node_id: "9", filename: "v.mp4", subfolder: "", type: "output" },
      { node_id: "9", filename: "a.flac", subfolder: "", type: "output" }
    ])
  })

  it("trusts the terminal message over status_str (a run-time cycle error says success)", () => {
    const h = toPromptHistory({
      outputs: {},
      status: {
        status_str: "success",
        completed: true,
        messages: [
          ["execution_start", { prompt_id: "p", timestamp: 10 }],
          ["execution_error", { prompt_id: "p", node_id: 5, exception_type: "graph.DependencyCycleError", exception_message: "cycle\n", timestamp: 20 }]
        ]
      }
    })
    expect(h).toEqual({
      outcome: "error",
      outputs: [],
      started_at: 10,
      completed_at: 20,
      error: { node_id: "5", exception_type: "graph.DependencyCycleError", exception_message: "cycle" }
    })
  })

  it("falls back to status_str without a terminal message, and tolerates a null status", () => {
    expect(toPromptHistory({ outputs: {}, status: { status_str: "success", messages: [] } }).outcome).toBe("success")
    const none = toPromptHistory({ outputs: {}, status: null })
    expect(none.outcome).toBe("error")
    expect(none.error?.exception_type).toBe("UnknownError")
    expect(toPromptHistory({ outputs: {}, status: { messages: [["execution_interrupted", { prompt_id: "p" }]] } })).toMatchObject({
      outcome: "interrupted", completed_at: null, error: null
    })
  })
})

describe("newer ComfyUI (2025-2026 servers, read from their source)", () => {
  it("reads history entries whose file records carry media metadata and asset fields", () => {
    const entry = {
      prompt: [3, "p", { "9": { class_type: "SaveImage", inputs: {} } }, { client_id: "c", create_time: 1760000000000 }, ["9"]],
      outputs: {
        "9": {
          images: [{
            filename: "a_00001_.png", subfolder: "", type: "output",
            metadata: { width: 512, height: 512, format: "png" },
            asset: { id: "x", asset_hash: "blake3:00", mime_type: "image/png", size: 10, tags: ["output"] }
          }],
          animated: [false]
        }
      },
      status: { status_str: "success", completed: true, messages: [["execution_start", { prompt_id: "p", timestamp: 1 }], ["execution_success", { prompt_id: "p", timestamp: 2 }]] },
      meta: { "9": { node_id: "9", display_node: "9", parent_node: null, real_node_id: "9" } }
    }
    expect(toPromptHistory(Schema.decodeUnknownSync(HistoryEntry)(entry))).toEqual({
      outcome: "success",
      outputs: [{ node_id: "9", filename: "a_00001_.png", subfolder: "", type: "output" }],
      started_at: 1,
      completed_at: 2,
      error: null,
      classes: { "9": "SaveImage" }
    })
  })

  it("reads an executed message whose output files are enriched, and an ExecutionBlocked error", () => {
    const output = { images: [{ filename: "a.png", subfolder: "", type: "output", metadata: { width: 1 } }] }
    expect(decodeFrame(JSON.stringify({ type: "executed", data: { node: "9", display_node: "9", output, prompt_id: "p" } }))).toEqual({
      _tag: "Event",
      event: { _tag: "Executed", prompt_id: "p", node: "9", output, files: [{ node_id: "9", filename: "a.png", subfolder: "", type: "output" }] }
    })
    const blocked = { prompt_id: "p", node_id: "4", node_type: "X", executed: [], exception_message: "Execution Blocked: no", exception_type: "ExecutionBlocked", traceback: [], current_inputs: [], current_outputs: [] }
    expect(decodeFrame(JSON.stringify({ type: "execution_error", data: blocked }))).toMatchObject({
      event: { _tag: "ExecutionError", node_id: "4", exception_type: "ExecutionBlocked", exception_message: "Execution Blocked: no" }
    })
  })
})

describe("output content types", () => {
  it("come from the file's extension where WES knows it, else from the runner, else application/octet-stream", () => {
    expect(outputContentType("voice_00001_.flac", "application/octet-stream")).toBe("audio/flac")
    expect(outputContentType("clip_00001_.MKV", undefined)).toBe("video/x-matroska")
    expect(outputContentType("anim_00001_.webp", "image/webp")).toBe("image/webp")
    expect(outputContentType("take.wav", "audio/x-wav")).toBe("audio/wav")
    expect(outputContentType("mesh.glb", "application/octet-stream")).toBe("model/gltf-binary")
    expect(outputContentType("latent_00001_.latent", "application/x-latent")).toBe("application/x-latent")
    expect(outputContentType("noextension", undefined)).toBe("application/octet-stream")
  })

  it("cover the video, audio and animation formats ComfyUI's and VideoHelperSuite's save nodes write", () => {
    const types = Object.fromEntries(["mp4", "webm", "mov", "mkv", "gif", "webp", "apng", "png", "wav", "mp3", "flac", "ogg", "opus", "ogv", "weba", "aiff"]
      .map((ext) => [ext, outputContentType(`take.${ext}`, "application/octet-stream")]))
    expect(types).toEqual({
      mp4: "video/mp4", webm: "video/webm", mov: "video/quicktime", mkv: "video/x-matroska", gif: "image/gif", webp: "image/webp",
      apng: "image/apng", png: "image/png", wav: "audio/wav", mp3: "audio/mpeg", flac: "audio/flac", ogg: "audio/ogg", opus: "audio/ogg",
      ogv: "video/ogg", weba: "audio/webm", aiff: "audio/aiff"
    })
  })
})

describe("queue decoding", () => {
  it("orders pending items by number, then prompt_id, whatever the heap layout", () => {
    expect(toQueueSnapshot({
      queue_running: [[3, "run", {}]],
      queue_pending: [[5, "b"], [-1, "front"], [5, "a"], [4.5, "c"]]
    })).toEqual({ running: ["run"], pending: ["front", "c", "a", "b"] })
  })
})

describe("prompt rejection messages", () => {
  it("keeps the runner's reasons and finds the failing node in node_errors, extra_info or details", () => {
    expect(rejection({
      error: { type: "prompt_outputs_failed_validation", message: "Prompt outputs failed validation", details: "" },
      node_errors: {
        "4": { errors: [{ message: "Value not in list", details: "upscale_method: 'foo' not in [...]" }], class_type: "ImageScale" },
        "9": { errors: [{ message: "Required input is missing", details: "images" }], class_type: "SaveImage" }
      }
    })).toEqual({
      error_type: "prompt_outputs_failed_validation",
      error_node: "4",
      message: "Prompt outputs failed validation: node 4 (ImageScale): Value not in list: upscale_method: 'foo' not in [...]; node 9 (SaveImage): Required input is missing: images"
    })
    expect(rejection({
      error: { type: "missing_node_type", message: "Node 'X' not found.", details: "Node ID '#12'", extra_info: { node_id: "12" } },
      node_errors: {}
    })).toMatchObject({ error_node: "12", message: "Node 'X' not found.: Node ID '#12'" })
    expect(rejection({ error: "no prompt", node_errors: [] })).toEqual({ error_type: "prompt_rejected", message: "no prompt", error_node: null })
  })
})

describe("WebSocket frame decoding", () => {
  it("maps the messages the service acts on, tolerating extra fields and numeric node ids", () => {
    expect(decodeFrame(JSON.stringify({ type: "executing", data: { node: 7, display_node: 7, prompt_id: "p", workflow_id: "w" } }))).toEqual({
      _tag: "Event", event: { _tag: "Executing", prompt_id: "p", node: "7" }
    })
    expect(decodeFrame(JSON.stringify({ type: "executing", data: { node: null, prompt_id: "p" } }))).toEqual({
      _tag: "Event", event: { _tag: "PromptDone", prompt_id: "p" }
    })
    expect(decodeFrame(JSON.stringify({ type: "progress", data: { value: 1, max: 2 } }))).toEqual({
      _tag: "Event", event: { _tag: "Progress", prompt_id: null, node: null, value: 1, max: 2 }
    })
    expect(decodeFrame(JSON.stringify({ type: "execution_success", data: { prompt_id: "p" } }))).toEqual({
      _tag: "Event", event: { _tag: "ExecutionSuccess", prompt_id: "p", timestamp: null }
    })
  })

  it("maps progress_state and execution_cached, keeping what newer servers add out of the way", () => {
    const nodes = {
      "3": { value: 1, max: 1, state: "finished", node_id: "3", prompt_id: "p", display_node_id: "3", parent_node_id: null, real_node_id: "3" },
      "4": { value: 5, max: 20, state: "running", node_id: "4", prompt_id: "p", display_node_id: "4", parent_node_id: null, real_node_id: "4", activity: "loading" }
    }
    expect(decodeFrame(JSON.stringify({ type: "progress_state", data: { prompt_id: "p", nodes } }))).toEqual({
      _tag: "Event",
      event: {
        _tag: "ProgressState",
        prompt_id: "p",
        nodes: [{ node: "3", state: "finished", value: 1, max: 1 }, { node: "4", state: "running", value: 5, max: 20 }]
      }
    })
    expect(decodeFrame(JSON.stringify({ type: "execution_cached", data: { nodes: ["1", 2], prompt_id: "p", timestamp: 1 } }))).toEqual({
      _tag: "Event", event: { _tag: "ExecutionCached", prompt_id: "p", nodes: ["1", "2"] }
    })
    expect(decodeFrame(JSON.stringify({ type: "progress_state", data: { prompt_id: "p", nodes: { "1": { state: "odd", value: 0, max: 1 } } } }))._tag)
      .toBe("Malformed")
  })

  it("decodes binary image frames with their bytes: type 1 by format, type 4 with its metadata; ignores text frames", () => {
    const frame = (type: number, head: number, rest: Uint8Array) => {
      const b = Buffer.alloc(8 + rest.length)
      b.writeUInt32BE(type, 0)
      b.writeUInt32BE(head, 4)
      b.set(rest, 8)
      return b
    }
    const image = Uint8Array.from({ length: 100 }, (_, i) => i)
    expect(decodeBinaryFrame(frame(1, 1, image))).toEqual({
      _tag: "Event", event: { _tag: "ImageFrame", prompt_id: null, node: null, image_type: "image/jpeg", image: Buffer.from(image) }
    })
    const meta = Buffer.from(JSON.stringify({ node_id: "4", prompt_id: "p", display_node_id: "4", parent_node_id: null, real_node_id: "4", image_type: "image/png" }))
    expect(decodeBinaryFrame(frame(4, meta.length, Buffer.concat([meta, image])))).toEqual({
      _tag: "Event", event: { _tag: "ImageFrame", prompt_id: "p", node: "4", image_type: "image/png", image: Buffer.from(image) }
    })
    expect(decodeBinaryFrame(frame(3, 1, Buffer.from("4hello")))).toEqual({ _tag: "Ignored" })
    expect(decodeBinaryFrame(frame(4, 1000, image))._tag).toBe("Malformed")
    expect(decodeBinaryFrame(new Uint8Array(3))._tag).toBe("Malformed")
  })

  it("attributes an image frame that names no node to the node the last executing message named, until the prompt ends", () => {
    const attribute = attributeImages()
    const frame = { _tag: "ImageFrame", prompt_id: null, node: null, image_type: "image/png", image: new Uint8Array(1) } as const
    expect(attribute(frame)).toEqual(frame)
    attribute({ _tag: "ExecutionStart", prompt_id: "p", timestamp: 1 })
    expect(attribute(frame)).toEqual(frame)
    attribute({ _tag: "Executing", prompt_id: "p", node: "3" })
    expect(attribute(frame)).toMatchObject({ prompt_id: "p", node: "3" })
    // A frame that names its node (type 4) keeps it.
    expect(attribute({ ...frame, prompt_id: "q", node: "7" })).toMatchObject({ prompt_id: "q", node: "7" })
    attribute({ _tag: "Executing", prompt_id: "p", node: "5" })
    expect(attribute(frame)).toMatchObject({ prompt_id: "p", node: "5" })
    attribute({ _tag: "ExecutionSuccess", prompt_id: "p", timestamp: 2 })
    expect(attribute(frame)).toEqual(frame)
  })

  it("ignores unknown types and an executing null without prompt_id; reports malformed frames", () => {
    expect(decodeFrame(JSON.stringify({ type: "feature_flags", data: { supports_preview_metadata: true } }))).toEqual({ _tag: "Ignored" })
    expect(decodeFrame(JSON.stringify({ type: "logs", data: { entries: [] } }))).toEqual({ _tag: "Ignored" })
    expect(decodeFrame(JSON.stringify({ type: "executing", data: { node: null } }))).toEqual({ _tag: "Ignored" })
    expect(decodeFrame("nope")._tag).toBe("Malformed")
    expect(decodeFrame(JSON.stringify({ data: {} }))._tag).toBe("Malformed")
    expect(decodeFrame(JSON.stringify({ type: "execution_start", data: { prompt_id: 5 } }))._tag).toBe("Malformed")
  })
})

describe("WebSocket URL", () => {
  it("maps http to ws and https to wss, keeping a path prefix and escaping the client id", () => {
    expect(websocketUrl(runner("http://host:8188"), "a b")).toBe("ws://host:8188/ws?clientId=a%20b")
    expect(websocketUrl(runner("https://gpu.example/comfy/"), "c")).toBe("wss://gpu.example/comfy/ws?clientId=c")
  })
})
