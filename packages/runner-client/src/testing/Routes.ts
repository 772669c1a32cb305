/**
 * The fake's HTTP routes (server.py), each answering as ComfyUI does: status codes, empty 200
 * bodies of the control endpoints, 500 for malformed JSON, `{}` for unknown ids.
 */
import * as crypto from "node:crypto"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { Executor } from "./Executor.js"
import { annotated, type FileStore, isFileType, type MimeTypes, parseMultipart, viewHeaders, within } from "./Files.js"
import type { ObjectInfoOptions } from "./FakeOptions.js"
import { cancelMany, cancelOne, getJob, listJobs } from "./Jobs.js"
import { applyReplacements, type NodeReplace, replacementsAnswer } from "./NodeReplacements.js"
import { NODES, nodeInfo } from "./Nodes.js"
import { type PromptQueue, type QueueItem, UnorderableItems } from "./PromptQueue.js"
import { PyError, pyBool, pyFloatOf, pyStr } from "./Python.js"
import { validatePrompt } from "./Validation.js"

/** An HTTP answer. */
export interface Reply {
  readonly status: number
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string | Buffer
}

/** A request as the routes see it (body already read). */
export interface RouteRequest {
  readonly method: string
  readonly params: Readonly<Record<string, string>>
  readonly query: URLSearchParams
  readonly headers: Readonly<Record<string, string | Array<string> | undefined>>
  readonly body: Buffer
}

/** Server state and actions the routes use. */
export interface RouteHost {
  readonly files: FileStore
  readonly queue: PromptQueue
  readonly executor: Executor
  readonly settings: {
    readonly promptIdMode: "uuid" | "legacy" | "ignored"
    /** Newer servers add `extra_data.create_time` (ms) to queued prompts; 0.3.64 does not. */
    readonly createTime: boolean
    readonly unknownNodeError: "invalid_prompt" | "missing_node_type"
    readonly version: string
    /** Newer servers' `/api/jobs` routes. */
    readonly jobsApi: boolean
    /** Newer servers' node replacements, by deprecated class; undefined: no `/node_replacements`. */
    readonly nodeReplacements: ReadonlyMap<string, ReadonlyArray<NodeReplace>> | undefined
    readonly maxUploadBytes: number
    readonly mimeTypes: MimeTypes
    /** Whether a catalogue class is loaded. */
    readonly loaded: (nodeClass: string) => boolean
    readonly objectInfo: ObjectInfoOptions
  }
  /** The POST counter (`self.number`), incremented by every POST /prompt without `number`. */
  nextNumber(): number
  /** Queues an item, broadcasts `status` and wakes the worker; throws `UnorderableItems` after queueing on a tie. */
  enqueue(item: QueueItem): void
  broadcastStatus(): void
  interrupt(promptId: string | undefined): void
  /** `PromptQueue.interrupt_if_running` (newer servers): only if `promptId` is the one running. */
  interruptIfRunning(promptId: string): boolean
  /** `PromptQueue.delete_queue_item` with its `status` broadcasts: whether it was pending. */
  dequeue(promptId: string): boolean
  freeMemory(): void
  recordSubmission(entry: { prompt_id: string | null; client_id: string | null; status: number; error_type: string | null; body: unknown }): void
  recordUpload(entry: { name: string | null; subfolder: string; type: string; size: number; overwrite: boolean; status: number }): void
  /** Resolves when the 200 answer of a queued prompt may go out (at once, unless `answerPromptsAfter`). */
  answerReady(promptId: string): Promise<void>
}

export const json = (value: unknown, status = 200): Reply => ({
  status,
  headers: { "content-type": "application/json; charset=utf-8" },
  body: JSON.stringify(value)
})

/** aiohttp's answer to an uncaught exception. */
export const serverError: Reply = {
  status: 500,
  headers: { "content-type": "text/plain; charset=utf-8" },
  body: "500 Internal Server Error\n\nServer got itself in trouble"
}

export const plain = (status: number, text: string): Reply => ({
  status,
  headers: { "content-type": "text/plain; charset=utf-8" },
  body: text
})

const empty = (status: number): Reply => ({ status })

/** `await request.json()`: malformed JSON raises (500). */
const bodyJson = (req: RouteRequest): unknown => {
  try {
    return JSON.parse(req.body.toString("utf8"))
  } catch {
    throw new PyError("json.decoder.JSONDecodeError", "Expecting value: line 1 column 1 (char 0)")
  }
}

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const asDict = (u: unknown): Record<string, unknown> => {
  if (!isObject(u)) throw new PyError("AttributeError", "'list' object has no attribute 'get'")
  return u
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const SENSITIVE = ["auth_token_comfy_org", "api_key_comfy_org"]

/** Server feature flags (`/features` and the WebSocket handshake). */
export const serverFeatures = (maxUploadBytes: number) => ({ supports_preview_metadata: true, max_upload_size: maxUploadBytes })

/** In `NODE_CLASS_MAPPINGS`: a loaded class of the catalogue, or one `/object_info` serves as given. */
const isNodeClass = (host: RouteHost, nodeClass: string): boolean =>
  (NODES.has(nodeClass) && host.settings.loaded(nodeClass)) || Object.hasOwn(host.settings.objectInfo.extra ?? {}, nodeClass)

const postPrompt = async (host: RouteHost, req: RouteRequest): Promise<Reply> => {
  const body = asDict(bodyJson(req))
  const requested = body.prompt_id
  const clientId = "client_id" in body ? pyStr(body.client_id) : null
  const record = (status: number, promptId: string | null, errorType: string | null) =>
    host.recordSubmission({ prompt_id: promptId, client_id: clientId, status, error_type: errorType, body })

  let number: number
  if ("number" in body) number = pyFloatOf(body.number)
  else {
    number = host.nextNumber()
    if ("front" in body && pyBool(body.front)) number = -number
  }

  if (!("prompt" in body)) {
    record(400, typeof requested === "string" ? requested : null, "no_prompt")
    const error = { type: "no_prompt", message: "No prompt provided", details: "No prompt provided", extra_info: {} }
    return json({ error, node_errors: {} }, 400)
  }

  let promptId: string
  if (requested === undefined || requested === null || host.settings.promptIdMode === "ignored") promptId = crypto.randomUUID()
  else if (host.settings.promptIdMode === "legacy") promptId = pyStr(requested)
  else if (typeof requested === "string" && UUID.test(requested)) promptId = requested
  else {
    record(400, typeof requested === "string" ? requested : pyStr(requested), "invalid_prompt_id")
    const error = {
      type: "invalid_prompt_id",
      message: "prompt_id must be a valid UUID",
      details: "prompt_id must be a UUID string in canonical lowercase hyphenated form; omit it to let the server generate one",
      extra_info: {}
    }
    return json({ error, node_errors: {} }, 400)
  }

  const prompt = structuredClone(body.prompt)
  const replacements = host.settings.nodeReplacements
  if (replacements !== undefined) applyReplacements(prompt, replacements, (c) => isNodeClass(host, c))
  const valid = await validatePrompt(prompt, body.partial_execution_targets, host.files, host.settings)
  const extraData: Record<string, unknown> = isObject(body.extra_data) ? { ...body.extra_data } : {}
  if ("client_id" in body) extraData.client_id = body.client_id
  if (!valid.ok) {
    record(400, promptId, valid.error.type)
    return json({ error: valid.error, node_errors: valid.nodeErrors }, 400)
  }
  for (const key of SENSITIVE) delete extraData[key]
  if (host.settings.createTime) extraData.create_time = Date.now()
  try {
    host.enqueue([number, promptId, prompt as Record<string, unknown>, extraData, valid.outputs])
  } catch (e) {
    if (e instanceof UnorderableItems) {
      record(500, promptId, null)
      return serverError
    }
    throw e
  }
  record(200, promptId, null)
  await host.answerReady(promptId)
  return json({ prompt_id: promptId, number, node_errors: valid.nodeErrors })
}

const postQueue = (host: RouteHost, req: RouteRequest): Reply => {
  const body = asDict(bodyJson(req))
  if ("clear" in body && body.clear) {
    host.queue.clear()
    host.broadcastStatus()
  }
  if ("delete" in body) {
    if (!Array.isArray(body.delete)) throw new PyError("TypeError", "'int' object is not iterable")
    for (const id of body.delete) {
      if (typeof id !== "string") continue
      for (let n = host.queue.delete(id); n > 0; n--) host.broadcastStatus()
    }
  }
  return empty(200)
}

const postInterrupt = (host: RouteHost, req: RouteRequest): Reply => {
  let body: unknown = {}
  try {
    body = JSON.parse(req.body.toString("utf8"))
  } catch {
    body = {}
  }
  const promptId = asDict(body).prompt_id
  host.interrupt(typeof promptId === "string" && promptId !== "" ? promptId : undefined)
  return empty(200)
}

const postHistory = (host: RouteHost, req: RouteRequest): Reply => {
  const body = asDict(bodyJson(req))
  if ("clear" in body && body.clear) host.queue.history.clear()
  if ("delete" in body && Array.isArray(body.delete)) {
    for (const id of body.delete) if (typeof id === "string") host.queue.history.delete(id)
  }
  return empty(200)
}

const intParam = (v: string | null): number | undefined => {
  if (v === null) return undefined
  if (!/^\s*[+-]?\d+\s*$/.test(v)) throw new PyError("ValueError", `invalid literal for int() with base 10: '${v}'`)
  return Number(v)
}

const uploadImage = async (host: RouteHost, req: RouteRequest): Promise<Reply> => {
  const parts = parseMultipart(String(req.headers["content-type"] ?? ""), req.body) ?? []
  const field = (name: string) => {
    const p = parts.find((x) => x.name === name && x.filename === undefined)
    return p === undefined ? undefined : p.data.toString("utf8")
  }
  const image = parts.find((p) => p.name === "image" && p.filename !== undefined)
  const type = field("type") ?? "input"
  const subfolder = field("subfolder") ?? ""
  const overwriteField = field("overwrite")
  const overwrite = overwriteField === "true" || overwriteField === "1"
  const record = (status: number, name: string | null) =>
    host.recordUpload({ name, subfolder, type, size: image?.data.length ?? 0, overwrite, status })
  if (!isFileType(type)) {
    record(500, null) // an unbound local in get_dir_by_type
    return serverError
  }
  if (image === undefined || image.filename === undefined || image.filename === "") {
    record(400, null)
    return empty(400)
  }
  const saved = await host.files.saveUpload(type, subfolder, image.filename, image.data, overwrite)
  if (saved === undefined) {
    record(400, null)
    return empty(400)
  }
  record(200, saved.name)
  return json({ name: saved.name, subfolder, type })
}

const view = async (host: RouteHost, req: RouteRequest): Promise<Reply> => {
  const raw = req.query.get("filename")
  if (raw === null) return empty(404)
  const a = annotated(raw)
  if (a.name === "") return empty(400)
  if (a.name.startsWith("/") || a.name.includes("..")) return empty(400)
  const type = a.type ?? req.query.get("type") ?? "output"
  if (!isFileType(type)) return empty(400)
  let dir = host.files.dir(type)
  const subfolder = req.query.get("subfolder")
  if (subfolder !== null) {
    const sub = within(dir, subfolder)
    if (sub === undefined) return empty(403)
    dir = sub
  }
  const name = path.basename(a.name)
  const file = path.join(dir, name)
  const stat = await fs.stat(file).catch(() => undefined)
  if (stat === undefined || !stat.isFile()) return empty(404)
  return { status: 200, headers: viewHeaders(name, host.settings.mimeTypes), body: await fs.readFile(file) }
}

const MODEL_FOLDERS = [
  "checkpoints", "configs", "loras", "vae", "text_encoders", "diffusion_models", "clip_vision", "style_models",
  "embeddings", "diffusers", "vae_approx", "controlnet", "gligen", "upscale_models", "hypernetworks",
  "photomaker", "classifiers"
]

const systemStats = (host: RouteHost): Reply =>
  json({
    system: {
      os: "posix",
      ram_total: os.totalmem(),
      ram_free: os.freemem(),
      comfyui_version: host.settings.version,
      required_frontend_version: "1.27.10",
      installed_templates_version: "0.1.95",
      required_templates_version: "0.1.95",
      python_version: "3.12.3 (fake)",
      pytorch_version: "2.8.0+cpu",
      embedded_python: false,
      argv: ["main.py", "--cpu"]
    },
    devices: [{
      name: "cpu",
      type: "cpu",
      index: null,
      vram_total: os.totalmem(),
      vram_free: os.freemem(),
      torch_vram_total: os.totalmem(),
      torch_vram_free: os.freemem()
    }]
  })

type Handler = (host: RouteHost, req: RouteRequest) => Reply | Promise<Reply>

interface Route {
  readonly method: string
  readonly pattern: RegExp
  readonly keys: ReadonlyArray<string>
  readonly handler: Handler
  /** Whether this server has the route (newer servers' routes are options of the fake). */
  readonly present?: (host: RouteHost) => boolean
}

/** A route of server.py: `template` as declared there (`/api/jobs` routes are declared with their prefix). */
const route = (method: string, template: string, handler: Handler, present?: (host: RouteHost) => boolean): Route => {
  const keys: Array<string> = []
  const pattern = new RegExp(`^${template.replace(/\{(\w+)\}/g, (_, k: string) => {
    keys.push(k)
    return "([^/]+)"
  })}$`)
  return present === undefined ? { method, pattern, keys, handler } : { method, pattern, keys, handler, present }
}

const withJobs = (h: RouteHost) => h.settings.jobsApi

const ROUTES: ReadonlyArray<Route> = [
  // A plain GET of /ws (no upgrade) fails as aiohttp's WebSocketResponse.prepare does.
  route("GET", "/ws", () => plain(400, "No WebSocket UPGRADE hdr: None\n Can \"Upgrade\" only to \"WebSocket\".")),
  route("GET", "/embeddings", () => json([])),
  route("GET", "/extensions", () => json([])),
  route("GET", "/models", () => json(MODEL_FOLDERS)),
  route("GET", "/models/{folder}", (_, r) => MODEL_FOLDERS.includes(r.params.folder!) ? json([]) : empty(404)),
  route("POST", "/upload/image", uploadImage),
  route("GET", "/view", view),
  route("GET", "/system_stats", systemStats),
  route("GET", "/features", (h) => json(serverFeatures(h.settings.maxUploadBytes))),
  route("GET", "/prompt", (h) => json({ exec_info: { queue_remaining: h.queue.remaining() } })),
  route("POST", "/prompt", postPrompt),
  route("GET", "/object_info", async (h) => {
    const { extra, failStatus } = h.settings.objectInfo
    if (failStatus !== undefined) return plain(failStatus, `${failStatus}: object_info failed`)
    const out: Record<string, unknown> = {}
    for (const def of NODES.values()) if (h.settings.loaded(def.name)) out[def.name] = await nodeInfo(def, h.files)
    return json({ ...out, ...extra })
  }),
  route("GET", "/object_info/{node_class}", async (h, r) => {
    const name = r.params.node_class!
    const def = NODES.get(name)
    const extra = h.settings.objectInfo.extra ?? {}
    if (def !== undefined && h.settings.loaded(name)) return json({ [def.name]: await nodeInfo(def, h.files) })
    return json(Object.hasOwn(extra, name) ? { [name]: extra[name] } : {})
  }),
  route("GET", "/history", (h, r) =>
    json(h.queue.historyPage(intParam(r.query.get("max_items")), intParam(r.query.get("offset")) ?? -1))),
  route("GET", "/history/{prompt_id}", (h, r) => {
    const entry = h.queue.history.get(r.params.prompt_id!)
    return json(entry === undefined ? {} : { [r.params.prompt_id!]: entry })
  }),
  route("POST", "/history", postHistory),
  route("GET", "/queue", (h) =>
    json({ queue_running: h.queue.running === undefined ? [] : [h.queue.running], queue_pending: h.queue.heap })),
  route("POST", "/queue", postQueue),
  route("POST", "/interrupt", postInterrupt),
  route("POST", "/free", (h, r) => {
    const body = asDict(bodyJson(r))
    if (body.free_memory) h.freeMemory()
    return empty(200)
  }),
  route("GET", "/api/jobs", listJobs, withJobs),
  route("GET", "/api/jobs/{job_id}", getJob, withJobs),
  route("POST", "/api/jobs/{job_id}/cancel", cancelOne, withJobs),
  route("POST", "/api/jobs/cancel", cancelMany, withJobs),
  route("GET", "/node_replacements", (h) => json(replacementsAnswer(h.settings.nodeReplacements!)), (h) => h.settings.nodeReplacements !== undefined)
]

/**
 * No route: the web root's static files answer (server.py adds them last, at `/`), as ComfyUI
 * 0.3.64 does: a GET or HEAD of a missing file is an empty 404, any other method a 405.
 */
const staticFiles = (method: string): Reply =>
  method === "GET" || method === "HEAD"
    ? { status: 404, headers: { "content-type": "application/octet-stream" }, body: "" }
    : { status: 405, headers: { "content-type": "text/plain; charset=utf-8", allow: "GET,HEAD" }, body: "405: Method Not Allowed" }

/** Dispatches a request by path (every route is `/X` and `/api/X` alike); 404 / 405 as aiohttp answers them. */
export const dispatch = async (host: RouteHost, pathname: string, req: Omit<RouteRequest, "params">): Promise<Reply> => {
  const unprefixed = pathname.startsWith("/api/") ? pathname.slice(4) : undefined
  let methodMismatch = false
  for (const r of ROUTES) {
    if (r.present !== undefined && !r.present(host)) continue
    const m = r.pattern.exec(pathname) ?? (unprefixed === undefined ? null : r.pattern.exec(unprefixed))
    if (m === null) continue
    if (r.method !== req.method && !(r.method === "GET" && req.method === "HEAD")) {
      methodMismatch = true
      continue
    }
    const params: Record<string, string> = {}
    r.keys.forEach((k, i) => {
      params[k] = decodeURIComponent(m[i + 1]!)
    })
    try {
      return await r.handler(host, { ...req, params })
    } catch (e) {
      if (e instanceof PyError) return serverError
      throw e
    }
  }
  return methodMismatch ? plain(405, "405: Method Not Allowed") : staticFiles(req.method)
}
