/**
 * Newer ComfyUI's jobs API (server.py `/api/jobs*`, comfy_execution/jobs.py), for a fake started
 * with `jobsApi: true`: every prompt as a job (queued `pending`, running `in_progress`, in the
 * history `completed`, `failed`, or `cancelled` when it was interrupted), listed, looked up and
 * cancelled. Null fields are left out (`prune_dict`). ComfyUI 0.3.64 and older have none of it.
 */
import type { HistoryEntry, PromptQueue, QueueItem } from "./PromptQueue.js"
import { pyRepr, pyStr } from "./Python.js"
import { json, type Reply, type RouteRequest } from "./Routes.js"

/** What the jobs routes need of the server. */
export interface JobsHost {
  readonly queue: PromptQueue
  /** `PromptQueue.interrupt_if_running`: interrupts only if `promptId` is the one running. */
  interruptIfRunning(promptId: string): boolean
  /** `PromptQueue.delete_queue_item` (with its status broadcasts): whether it was pending. */
  dequeue(promptId: string): boolean
}

const STATUSES = ["pending", "in_progress", "completed", "failed", "cancelled"] as const
const PREVIEWABLE = new Set(["images", "video", "audio", "3d", "text"])
const THREE_D = [".obj", ".fbx", ".gltf", ".glb", ".usdz"]
const TEXT_FILES = [".txt", ".md", ".json"]
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

type Item = Record<string, unknown>
const isObject = (u: unknown): u is Item => typeof u === "object" && u !== null && !Array.isArray(u)
const prune = (o: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined))
const endsWithAny = (name: unknown, ends: ReadonlyArray<string>) => typeof name === "string" && ends.some((e) => name.toLowerCase().endsWith(e))

/** `create_time` and the UI workflow's id from a prompt's extra data. */
const metadata = (extra: Item) => {
  const pnginfo = isObject(extra["extra_pnginfo"]) ? extra["extra_pnginfo"] : {}
  const workflow = isObject(pnginfo["workflow"]) ? pnginfo["workflow"] : {}
  return { create_time: extra["create_time"], workflow_id: workflow["id"] }
}

/** `normalize_output_item`: a 3D file name becomes a file record; other strings are not files. */
const normalizeItem = (item: unknown): Item | undefined =>
  isObject(item) ? item : endsWithAny(item, THREE_D) ? { filename: item, type: "output", subfolder: "", mediaType: "3d" } : undefined

const previewable = (mediaType: string, item: Item): boolean => {
  const format = typeof item["format"] === "string" ? item["format"] : ""
  return PREVIEWABLE.has(mediaType) || format.startsWith("video/") || format.startsWith("audio/") ||
    endsWithAny(item["filename"], THREE_D) || endsWithAny(item["filename"], TEXT_FILES)
}

/** `get_outputs_summary` and `count_previewable_outputs`: output counts and the preview (visual media first). */
const outputsSummary = (outputs: Item) => {
  let count = 0
  let previewables = 0
  let preview: Item | undefined
  let fallback: Item | undefined
  let textFile: Item | undefined
  let text: Item | undefined
  for (const [nodeId, node] of Object.entries(outputs)) {
    if (!isObject(node)) continue
    for (const [mediaType, items] of Object.entries(node)) {
      if (mediaType === "animated" || !Array.isArray(items)) continue
      for (const raw of items) {
        const item = normalizeItem(raw)
        if (item === undefined) {
          if (mediaType === "text" && preview === undefined && text === undefined) {
            const value = pyStr(raw)
            text = { content: value.slice(0, 1024), ...(value.length > 1024 ? { truncated: true } : {}), nodeId, mediaType }
          }
          continue
        }
        count++
        if (!previewable(mediaType, item)) continue
        previewables++
        if (preview !== undefined) continue
        const enriched = { ...item, nodeId, ...("mediaType" in item ? {} : { mediaType }) }
        if (mediaType === "text" || endsWithAny(item["filename"], TEXT_FILES)) textFile ??= enriched
        else if (item["type"] === "output") preview = enriched
        else fallback ??= enriched
      }
    }
  }
  return { count, previewables, preview: preview ?? fallback ?? textFile ?? text }
}

/** `normalize_queue_item`. */
const queuedJob = (item: QueueItem, status: "pending" | "in_progress", detail: boolean): Item => {
  const [priority, id, prompt, extra] = item
  const job = prune({ id, status, priority, ...metadata(extra), outputs_count: 0, previewable_outputs_count: 0 })
  return detail ? { ...job, workflow: { prompt, extra_data: extra } } : job
}

/** `normalize_history_item`: the end from the terminal message, `cancelled` for an interrupted prompt. */
const finishedJob = (id: string, entry: HistoryEntry, detail: boolean): Item => {
  const [priority, , prompt, extra] = entry.prompt
  let started: unknown
  let ended: unknown
  let error: unknown
  let interrupted = false
  for (const [type, data] of entry.status?.messages ?? []) {
    if (type === "execution_start") started = data["timestamp"]
    else if (type === "execution_success" || type === "execution_error" || type === "execution_interrupted") {
      ended = data["timestamp"]
      if (type === "execution_error") error = data
      if (type === "execution_interrupted") interrupted = true
    }
  }
  const status = entry.status?.status_str === "error" ? (interrupted ? "cancelled" : "failed") : "completed"
  const { count, preview, previewables } = outputsSummary(entry.outputs)
  const job = prune({
    id,
    status,
    priority,
    ...metadata(extra),
    execution_start_time: started,
    execution_end_time: ended,
    execution_error: error,
    outputs_count: count,
    previewable_outputs_count: previewables,
    preview_output: preview
  })
  if (!detail) return job
  const outputs = Object.fromEntries(Object.entries(entry.outputs).map(([node, ui]) =>
    [node, isObject(ui)
      ? Object.fromEntries(Object.entries(ui).map(([k, v]) =>
        [k, k === "animated" || !Array.isArray(v) ? v : v.filter((x) => x !== null).map((x) => normalizeItem(x) ?? x)]))
      : ui]))
  return { ...job, outputs, execution_status: entry.status, workflow: { prompt, extra_data: extra } }
}

/** `get_job`: history first, then running, then pending. */
const findJob = (queue: PromptQueue, id: string): Item | undefined => {
  const entry = queue.history.get(id)
  if (entry !== undefined) return finishedJob(id, entry, true)
  if (queue.running?.[1] === id) return queuedJob(queue.running, "in_progress", true)
  const pending = queue.heap.find((item) => item[1] === id)
  return pending === undefined ? undefined : queuedJob(pending, "pending", true)
}

/** `_cancel_job_by_id`: interrupts it if running, dequeues it if pending (or interrupts it if it just started). */
const cancelJob = (host: JobsHost, id: string): boolean => {
  if (host.queue.running?.[1] === id) return host.interruptIfRunning(id)
  if (host.queue.heap.some((item) => item[1] === id)) return host.dequeue(id) || host.interruptIfRunning(id)
  return false
}

const error = (message: string, extra: Item = {}) => json({ error: message, ...extra }, 400)
const intOf = (v: string): number | undefined => (/^\s*[+-]?\d+\s*$/.test(v) ? Number(v) : undefined)

/** `GET /api/jobs`: filtered, sorted and paged. */
export const listJobs = (host: JobsHost, req: RouteRequest): Reply => {
  const q = req.query
  const statusParam = q.get("status")
  const filter = statusParam === null || statusParam === "" ? [...STATUSES] : statusParam.split(",").map((s) => s.trim().toLowerCase()).filter((s) => s !== "")
  const invalid = filter.filter((s) => !(STATUSES as ReadonlyArray<string>).includes(s))
  if (invalid.length > 0) return error(`Invalid status value(s): ${invalid.join(", ")}. Valid values: ${STATUSES.join(", ")}`)
  const sortBy = (q.get("sort_by") ?? "created_at").toLowerCase()
  const sortOrder = (q.get("sort_order") ?? "desc").toLowerCase()
  if (sortBy !== "created_at" && sortBy !== "execution_duration") return error("sort_by must be 'created_at' or 'execution_duration'")
  if (sortOrder !== "asc" && sortOrder !== "desc") return error("sort_order must be 'asc' or 'desc'")
  let limit: number | null = null
  if (q.has("limit")) {
    const n = intOf(q.get("limit")!)
    if (n === undefined) return error("limit must be an integer")
    if (n <= 0) return error("limit must be a positive integer")
    limit = n
  }
  let offset = 0
  if (q.has("offset")) {
    const n = intOf(q.get("offset")!)
    if (n === undefined) return error("offset must be an integer")
    offset = Math.max(0, n)
  }
  let jobs: Array<Item> = []
  if (filter.includes("in_progress") && host.queue.running !== undefined) jobs.push(queuedJob(host.queue.running, "in_progress", false))
  if (filter.includes("pending")) for (const item of host.queue.heap) jobs.push(queuedJob(item, "pending", false))
  if (filter.some((s) => s === "completed" || s === "failed" || s === "cancelled")) {
    for (const [id, entry] of host.queue.history) {
      const job = finishedJob(id, entry, false)
      if (filter.includes(job["status"] as string)) jobs.push(job)
    }
  }
  const workflowId = q.get("workflow_id")
  if (workflowId !== null && workflowId !== "") jobs = jobs.filter((j) => j["workflow_id"] === workflowId)
  const num = (v: unknown) => (typeof v === "number" ? v : 0)
  const key = sortBy === "execution_duration"
    ? (j: Item) => (num(j["execution_end_time"]) !== 0 && num(j["execution_start_time"]) !== 0 ? num(j["execution_end_time"]) - num(j["execution_start_time"]) : 0)
    : (j: Item) => num(j["create_time"])
  // Python's sort is stable in both directions.
  jobs.sort((a, b) => (sortOrder === "desc" ? key(b) - key(a) : key(a) - key(b)))
  const total = jobs.length
  const page = jobs.slice(offset, limit === null ? undefined : offset + limit)
  return json({ jobs: page, pagination: { offset, limit, total, has_more: offset + page.length < total } })
}

/** `GET /api/jobs/{job_id}`. */
export const getJob = (host: JobsHost, req: RouteRequest): Reply => {
  const job = findJob(host.queue, req.params["job_id"]!)
  return job === undefined ? json({ error: "Job not found" }, 404) : json(job)
}

/** `POST /api/jobs/{job_id}/cancel`: idempotent, `{"cancelled": false}` for an ended or unknown job. */
export const cancelOne = (host: JobsHost, req: RouteRequest): Reply => json({ cancelled: cancelJob(host, req.params["job_id"]!) })

/** `POST /api/jobs/cancel` with `{"job_ids": [...]}`: every id must be a canonical UUID. */
export const cancelMany = (host: JobsHost, req: RouteRequest): Reply => {
  let body: unknown
  try {
    body = JSON.parse(req.body.toString("utf8"))
  } catch {
    return error("Request body must be valid JSON")
  }
  const ids = isObject(body) ? body["job_ids"] : undefined
  if (!Array.isArray(ids)) return error("job_ids must be a list")
  const invalid = ids.filter((id) => typeof id !== "string" || !UUID.test(id))
  if (invalid.length > 0) return error("job_ids contains invalid id(s)", { invalid_ids: invalid.map((id) => (typeof id === "string" ? id : pyRepr(id))) })
  let cancelled = false
  for (const id of ids as ReadonlyArray<string>) if (cancelJob(host, id)) cancelled = true
  return json({ cancelled })
}
