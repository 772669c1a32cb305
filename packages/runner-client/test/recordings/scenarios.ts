/**
 * The scenarios recorded against ComfyUI 0.3.64 and replayed against the fake: each drives a
 * server through one `Session` (one WebSocket client, HTTP exchanges in a fixed order, waiting
 * for the frames that end each step, so the recording does not depend on timing). Node inputs
 * differ between scenarios so that nothing one leaves in ComfyUI's cache is reused by another.
 */
import { solidPng } from "@wes/runner-client/testing"
import { type Recording, Session } from "./Recorder.js"

type Graph = Record<string, { readonly class_type: string; readonly inputs: Record<string, unknown> }>

export interface Scenario {
  readonly name: string
  /** Under `/api` (the prefix every route also has). */
  readonly api?: boolean
  readonly featureFlags?: boolean
  /**
   * Recorded from ComfyUI only, never replayed against the fake: shapes of what the fake does not
   * have (model loaders), kept as test data for the capability summary.
   */
  readonly realOnly?: boolean
  /** The part of a recording the fake must reproduce (default: all of it). */
  readonly compared?: (recording: Recording) => unknown
  /**
   * The recording with what depends on timing made canonical, for ComfyUI and the fake alike
   * (default: as it is).
   */
  readonly settle?: (recording: Recording) => Recording
  readonly run: (s: Session) => Promise<void>
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

/**
 * An input of `/object_info` as clients read it: a combo's options (an upload input's options are
 * the server's input folder, so only the fact is kept), or the type; tooltips and widget hints go.
 */
const inputShape = (spec: unknown): unknown => {
  if (!Array.isArray(spec)) return spec
  const config = isRecord(spec[1]) ? spec[1] : {}
  const upload = Object.keys(config).filter((k) => k.endsWith("_upload") && config[k] === true)
  if (upload.length > 0) return { combo: "<input files>", upload }
  if (Array.isArray(spec[0])) return { combo: spec[0] }
  if (spec[0] === "COMBO") return { combo: config["options"] }
  return { type: spec[0] }
}

/** A node class of `/object_info` reduced to what WES and ComfyUI's clients use: inputs, outputs, output node. */
export const nodeShape = (info: unknown): unknown => {
  if (!isRecord(info) || !isRecord(info["input"])) return info
  const sections: Record<string, unknown> = {}
  for (const section of ["required", "optional"]) {
    const specs = info["input"][section]
    if (isRecord(specs)) sections[section] = Object.fromEntries(Object.entries(specs).map(([k, v]) => [k, inputShape(v)]))
  }
  return { name: info["name"], input: sections, output: info["output"], output_node: info["output_node"] }
}

/**
 * The node classes of the fake's catalogue that ComfyUI 0.3.64 has too (the recordings' ComfyUI
 * loads its bundled SaveImageWebsocket: `WEBSOCKET_IMAGE_SAVE`). Not FakeSleep (the fake's own),
 * nor EmptyAudio and SaveAudio (they need torchaudio, which the recordings' install lacks).
 */
export const SHARED_NODE_CLASSES: ReadonlyArray<string> = [
  "EmptyImage", "ImageInvert", "ImageScale", "MaskToImage", "ImageBlur", "SolidMask", "LoadImage", "SaveImage", "PreviewImage",
  "SaveAnimatedWEBP", "PrimitiveString", "PrimitiveStringMultiline", "PrimitiveInt", "PrimitiveFloat", "PrimitiveBoolean",
  "StringConcatenate", "PreviewAny", "SaveImageWebsocket", "CreateVideo", "SaveVideo"
]

/**
 * Classes whose inputs show every shape the capability summary reads: V1 combos of model files
 * (empty without models, or with built-in entries: `pixel_space`, `*.yaml`), V3 `COMBO` loaders,
 * combos that are not files (`sampler_name`), and upload inputs (images, videos) that list the
 * input folder rather than models.
 */
export const LOADER_SHAPE_CLASSES: ReadonlyArray<string> = [
  "CheckpointLoaderSimple", "CheckpointLoader", "LoraLoader", "LoraLoaderModelOnly", "VAELoader", "UNETLoader", "CLIPLoader",
  "TripleCLIPLoader", "ControlNetLoader", "KSampler", "LoadImageOutput", "LoadVideo"
]

type Message = { readonly type: string; readonly data: Record<string, unknown> }

/** The running prompt's messages about its nodes. */
const NODE_MESSAGES = new Set(["progress_state", "executing", "executed", "progress"])

/**
 * Where ComfyUI notices an interrupt depends on timing: it checks before each node, right after
 * announcing it, so an interrupt sent once node 2 is announced is noticed there or at a later
 * node, as soon as ComfyUI's thread gets to the check (at node 2 under CPU load, at node 3
 * otherwise). So the running prompt's node messages after node 2's announcement go, and an
 * interruption at node k of the chain, with nodes 1..k-1 executed, names "<node k>" and
 * "<nodes before it>"; any other interruption is left as it is, for the comparison to show.
 */
const settleInterrupt = (r: Recording): Recording => {
  const interrupted = (d: Record<string, unknown>): Record<string, unknown> => {
    const k = Number(d["node_id"])
    const before = Array.from({ length: Math.max(0, k - 1) }, (_, i) => String(i + 1))
    const consistent = k >= 2 && k <= 7 && d["node_type"] === "ImageBlur" && JSON.stringify(d["executed"]) === JSON.stringify(before)
    return consistent ? { ...d, node_id: "<node k>", executed: "<nodes before it>" } : d
  }
  const ws = r.ws as ReadonlyArray<Message>
  const from = ws.findIndex((m) => m.type === "executing" && m.data["node"] === "2" && m.data["prompt_id"] === "<running>")
  const to = ws.findIndex((m) => m.type === "execution_interrupted")
  if (from === -1 || to < from) return r
  const settled = ws
    .filter((m, i) => !(i > from && i < to && NODE_MESSAGES.has(m.type) && m.data["prompt_id"] === "<running>"))
    .map((m) => (m.type === "execution_interrupted" ? { ...m, data: interrupted(m.data) } : m))
  const http = r.http.map((e) => {
    const entry = e.request === "GET /history/<running>" && isRecord(e.answer) ? e.answer["<running>"] : undefined
    const status = isRecord(entry) && isRecord(entry["status"]) ? entry["status"] : undefined
    if (!isRecord(entry) || status === undefined || !Array.isArray(status["messages"])) return e
    const messages = (status["messages"] as ReadonlyArray<unknown>).map((m) =>
      Array.isArray(m) && m[0] === "execution_interrupted" && isRecord(m[1]) ? [m[0], interrupted(m[1])] : m
    )
    return { ...e, answer: { ...e.answer as Record<string, unknown>, "<running>": { ...entry, status: { ...status, messages } } } }
  })
  return { ...r, http, ws: settled }
}

const empty = (color: number, size = 64, batch = 1) =>
  ({ class_type: "EmptyImage", inputs: { width: size, height: size, batch_size: batch, color } })
const invert = (from: string) => ({ class_type: "ImageInvert", inputs: { image: [from, 0] } })
const save = (from: string, prefix: string) => ({ class_type: "SaveImage", inputs: { images: [from, 0], filename_prefix: prefix } })

/** EmptyImage -> ImageInvert -> SaveImage. */
const smoke = (color: number, prefix: string): Graph => ({ "1": empty(color), "2": invert("1"), "3": save("2", prefix) })

/** A file of the prompt's history outputs, as `/view` parameters. */
const viewPath = (history: unknown, promptId: string, node: string, index = 0): string => {
  const entry = (history as Record<string, { outputs: Record<string, Record<string, Array<Record<string, string>>>> }>)[promptId]
  const file = Object.values(entry?.outputs[node] ?? {}).flat()[index]
  if (file === undefined) throw new Error(`no output file ${index} of node ${node}`)
  return `/view?${new URLSearchParams({ filename: file["filename"]!, subfolder: file["subfolder"]!, type: file["type"]! })}`
}

/** Runs `graph` to its end and reads its history; returns the history answer. */
const runToEnd = async (s: Session, label: string, graph: Graph) => {
  const id = s.promptId(label)
  await s.submit(id, graph)
  await s.done(id)
  return { id, history: (await s.request("GET", `/history/${id}`)).json }
}

export const scenarios: ReadonlyArray<Scenario> = [
  {
    name: "smoke",
    run: async (s) => {
      const { id, history } = await runToEnd(s, "A", smoke(0x0000ff, `${s.run}/smoke`))
      await s.request("GET", "/queue")
      await s.request("GET", viewPath(history, id, "3"))
    }
  },
  {
    name: "api-prefix",
    api: true,
    run: async (s) => {
      const { id, history } = await runToEnd(s, "A", smoke(0x00ff00, `${s.run}/api`))
      await s.request("GET", viewPath(history, id, "3"))
    }
  },
  {
    name: "cached-rerun",
    run: async (s) => {
      const graph = smoke(0xff0000, `${s.run}/cached`)
      await runToEnd(s, "A", graph)
      // The same graph again: every node is cached; the output node replays its UI, no new file.
      await runToEnd(s, "B", graph)
    }
  },
  {
    name: "load-image",
    run: async (s) => {
      await s.upload(`${s.run}_in.png`, solidPng(8, 8, 0x336699), "wes")
      const { id, history } = await runToEnd(s, "A", {
        "1": { class_type: "LoadImage", inputs: { image: `wes/${s.run}_in.png` } },
        "2": invert("1"),
        "3": save("2", `${s.run}/loaded`)
      })
      await s.request("GET", viewPath(history, id, "3"))
    }
  },
  {
    name: "outputs",
    run: async (s) => {
      // One output node per prompt: ComfyUI runs several output nodes in the order of a Python set,
      // which varies between processes. The shared EmptyImage is cached after the first prompt.
      const images = empty(0x123456, 32, 2)
      const batch = await runToEnd(s, "batch", { "1": images, "2": save("1", `${s.run}/batch`) })
      await s.request("GET", viewPath(batch.history, batch.id, "2", 1))
      const animated = await runToEnd(s, "animated", {
        "1": images,
        "2": { class_type: "SaveAnimatedWEBP", inputs: { images: ["1", 0], filename_prefix: `${s.run}/anim`, fps: 6, lossless: false, quality: 80, method: "default" } }
      })
      await s.request("GET", viewPath(animated.history, animated.id, "2"))
      const preview = await runToEnd(s, "preview", { "1": images, "2": { class_type: "PreviewImage", inputs: { images: ["1", 0] } } })
      await s.request("GET", viewPath(preview.history, preview.id, "2", 1))
    }
  },
  {
    name: "video",
    run: async (s) => {
      const { id, history } = await runToEnd(s, "A", {
        "1": empty(0x2468ac, 32, 3),
        "2": { class_type: "CreateVideo", inputs: { images: ["1", 0], fps: 6 } },
        "3": { class_type: "SaveVideo", inputs: { video: ["2", 0], filename_prefix: `${s.run}/clip`, format: "auto", codec: "auto" } }
      })
      await s.request("GET", viewPath(history, id, "3"))
    }
  },
  {
    // SaveImageWebsocket: each image a binary frame while the node runs (type 4, with metadata, to
    // a client that announced it reads them), no file, nothing in the history's outputs.
    name: "websocket-image",
    featureFlags: true,
    run: async (s) => {
      await runToEnd(s, "A", { "1": empty(0x13579b, 40, 2), "2": { class_type: "SaveImageWebsocket", inputs: { images: ["1", 0] } } })
    }
  },
  {
    // The same to a client that announced nothing: type 1 frames (PNG), named only by their place
    // between `executing` messages.
    name: "websocket-image-legacy",
    run: async (s) => {
      await runToEnd(s, "A", { "1": empty(0x2a4c6e, 24, 2), "2": { class_type: "SaveImageWebsocket", inputs: { images: ["1", 0] } } })
    }
  },
  {
    name: "rejected",
    run: async (s) => {
      await s.submit(s.promptId("unknown"), { "1": { class_type: "NoSuchNode", inputs: {} }, "2": save("1", `${s.run}/x`) })
      await s.submit(s.promptId("missing"), { "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1 } }, "2": save("1", `${s.run}/x`) })
      await s.submit(s.promptId("bad-value"), {
        "1": { class_type: "EmptyImage", inputs: { width: 0, height: 8, batch_size: 1, color: 0 } },
        "2": { class_type: "ImageScale", inputs: { image: ["1", 0], upscale_method: "foo", width: 8, height: 8, crop: "disabled" } },
        "3": save("2", `${s.run}/x`)
      })
      await s.submit(s.promptId("no-outputs"), { "1": empty(0x010203), "2": invert("1") })
      await s.request("POST", "/prompt", { client_id: s.clientId })
    }
  },
  {
    name: "node-error",
    run: async (s) => {
      await s.upload(`${s.run}_bad.png`, new TextEncoder().encode("not an image"), "wes")
      await runToEnd(s, "A", {
        "1": { class_type: "LoadImage", inputs: { image: `wes/${s.run}_bad.png` } },
        "2": invert("1"),
        "3": save("2", `${s.run}/bad`)
      })
    }
  },
  {
    name: "cancel",
    settle: settleInterrupt,
    run: async (s) => {
      // A chain of blurs runs for seconds; interrupts land between nodes.
      const chain = (prefix: string): Graph => {
        const g: Graph = { "1": empty(0x445566, 768) }
        for (let i = 2; i <= 7; i++) g[String(i)] = { class_type: "ImageBlur", inputs: { image: [String(i - 1), 0], blur_radius: 31, sigma: 5 } }
        g["8"] = save("7", prefix)
        return g
      }
      const running = s.promptId("running")
      const queued = s.promptId("queued")
      await s.submit(running, chain(`${s.run}/running`))
      await s.executing(running, "2")
      await s.submit(queued, chain(`${s.run}/queued`))
      await s.request("POST", "/queue", { delete: [queued] })
      await s.request("POST", "/interrupt", { prompt_id: running })
      await s.done(running)
      await s.request("GET", `/history/${running}`)
      await s.request("GET", `/history/${queued}`)
      await s.request("GET", "/queue")
    }
  },
  {
    name: "object-info",
    compared: (r) => r.http.map((e) => ({
      ...e,
      answer: isRecord(e.answer) ? Object.fromEntries(Object.entries(e.answer).map(([k, v]) => [k, nodeShape(v)])) : e.answer
    })),
    run: async (s) => {
      for (const name of SHARED_NODE_CLASSES) await s.request("GET", `/object_info/${name}`)
      await s.request("GET", "/object_info/NoSuchNode")
    }
  },
  {
    name: "object-info-loaders",
    realOnly: true,
    run: async (s) => {
      for (const name of LOADER_SHAPE_CLASSES) await s.request("GET", `/object_info/${name}`)
    }
  },
  {
    name: "feature-flags",
    featureFlags: true,
    run: async (s) => {
      await s.request("GET", "/features")
    }
  },
  {
    // Newer servers' routes, which WES asks for to choose its path (the jobs API, node replacements).
    name: "newer-routes",
    run: async (s) => {
      const id = s.promptId("unknown")
      await s.request("GET", "/api/jobs?status=in_progress&limit=1")
      await s.request("GET", `/api/jobs/${id}`)
      await s.request("POST", `/api/jobs/${id}/cancel`)
      await s.request("GET", "/node_replacements")
    }
  }
]

/** Runs `scenario` against the server at `url` and returns its normalised recording. */
export const record = async (url: string, scenario: Scenario): Promise<Recording> => {
  const s = new Session(scenario.api === true ? `${url}/api` : url)
  try {
    await s.connect({ featureFlags: scenario.featureFlags === true })
    await scenario.run(s)
    return s.recording(scenario.name)
  } finally {
    await s.close()
  }
}
