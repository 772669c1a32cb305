/**
 * Records what a ComfyUI server (the real one or the fake) sends while a scenario drives it:
 * every HTTP exchange (method, path, status, content type, body) and every WebSocket frame of
 * one client, normalised so that two runs of the same scenario give the same recording: prompt
 * and client ids become labels, timestamps, priority numbers, random name parts, absolute paths
 * and tracebacks become placeholders, lists ComfyUI builds from Python sets are sorted, and file
 * bodies are reduced to their first bytes (the format's signature). `recordings/*.json` are such recordings of ComfyUI 0.3.64.
 */
import { WebSocket } from "ws"

/** One HTTP request and its answer, normalised. */
export interface Exchange {
  readonly request: string
  readonly body?: unknown
  readonly status: number
  readonly content_type: string | null
  readonly answer: unknown
}

/** A scenario's recording. */
export interface Recording {
  readonly scenario: string
  readonly http: ReadonlyArray<Exchange>
  readonly ws: ReadonlyArray<unknown>
}

/** A JSON WebSocket message as received (before normalisation). */
export interface Frame {
  readonly type: string
  readonly data: Record<string, unknown>
}

/** Lists ComfyUI builds from Python sets: their order varies between processes, so they are sorted. */
const SET_KEYS = new Set(["executed", "current_outputs", "dependent_outputs", "nodes"])

const sorted = (list: ReadonlyArray<unknown>): Array<unknown> => [...list].sort((a, b) => String(a).localeCompare(String(b)))

const PLACEHOLDER_KEYS: Readonly<Record<string, string>> = {
  timestamp: "<ms>",
  create_time: "<ms>",
  number: "<number>"
}

/** A file's signature: its first four bytes, with the brand of RIFF (WEBP) and ISO media (`ftyp`, whose first four are a size). */
const fileMagic = (bytes: Buffer): string => {
  if (bytes.toString("latin1", 4, 8) === "ftyp") return "....ftyp"
  return bytes.subarray(0, 4).toString("latin1") + (bytes.toString("latin1", 8, 12) === "WEBP" ? "....WEBP" : "")
}

/** An image as a client reads it: `PNG <width>x<height>`, or its signature. */
const imageShape = (image: Buffer): string =>
  image.toString("latin1", 1, 4) === "PNG" && image.toString("latin1", 12, 16) === "IHDR"
    ? `PNG ${image.readUInt32BE(16)}x${image.readUInt32BE(20)}`
    : fileMagic(image)

export class Session {
  readonly exchanges: Array<Exchange> = []
  readonly frames: Array<unknown> = []
  /** JSON frames as received, for the scenario's waits. */
  readonly received: Array<Frame> = []
  /** A random token in every file name prefix of this run (SaveImage counters then start at 1). */
  readonly run = `r${Math.random().toString(16).slice(2, 10)}`
  private readonly labels = new Map<string, string>()
  private readonly listeners = new Set<() => void>()
  private socket: WebSocket | undefined

  constructor(readonly base: string, readonly clientId = `rec-${crypto.randomUUID()}`) {
    this.labels.set(clientId, "<client>")
  }

  /** A fresh prompt id, written as `<label>` in the recording. */
  promptId(label: string): string {
    const id = crypto.randomUUID()
    this.labels.set(id, `<${label}>`)
    return id
  }

  /** Opens the WebSocket (`/ws`, or `/api/ws` under an `/api` base), optionally announcing feature flags, and waits for the first frame. */
  async connect(options: { readonly featureFlags?: boolean } = {}): Promise<void> {
    const ws = new WebSocket(`${this.base.replace(/^http/, "ws")}/ws?clientId=${encodeURIComponent(this.clientId)}`)
    this.socket = ws
    ws.on("message", (data, isBinary) => {
      if (isBinary) this.frames.push(this.binaryFrame(Buffer.from(data as Buffer)))
      else {
        const frame = JSON.parse(String(data)) as Frame
        this.received.push(frame)
        this.frames.push(this.normalise(frame))
      }
      for (const l of [...this.listeners]) l()
    })
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve())
      ws.once("error", reject)
    })
    if (options.featureFlags === true) ws.send(JSON.stringify({ type: "feature_flags", data: { supports_preview_metadata: true } }))
    await this.until("the first frame", (frames) => frames.length > (options.featureFlags === true ? 1 : 0))
  }

  /**
   * A binary frame: its type, its header (type 1: the image format; type 4: the metadata,
   * normalised) and its image as clients read it (format and size; encoders differ in the bytes).
   */
  private binaryFrame(b: Buffer): unknown {
    const type = b.readUInt32BE(0)
    if (type === 1) return { binary: 1, format: b.readUInt32BE(4), image: imageShape(b.subarray(8)) }
    if (type === 4) {
      const length = b.readUInt32BE(4)
      return { binary: 4, metadata: this.normalise(JSON.parse(b.toString("utf8", 8, 8 + length))), image: imageShape(b.subarray(8 + length)) }
    }
    return { binary: type, bytes: "<bytes>" }
  }

  /** Waits (at most `timeoutMs`) until `predicate` holds over the JSON frames received. */
  until(what: string, predicate: (frames: ReadonlyArray<Frame>) => boolean, timeoutMs = 60_000): Promise<void> {
    if (predicate(this.received)) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!predicate(this.received)) return
        clearTimeout(timer)
        this.listeners.delete(check)
        resolve()
      }
      const timer = setTimeout(() => {
        this.listeners.delete(check)
        reject(new Error(`timed out waiting for ${what}; got ${JSON.stringify(this.received.map((f) => f.type))}`))
      }, timeoutMs)
      this.listeners.add(check)
    })
  }

  /** Waits for `executing {node: null}` of a prompt: it ended and its history is written. */
  done(promptId: string): Promise<void> {
    return this.until(`the end of ${this.labels.get(promptId) ?? promptId}`, (frames) =>
      frames.some((f) => f.type === "executing" && f.data["node"] === null && f.data["prompt_id"] === promptId))
  }

  /** Waits for `executing {node}` of a prompt. */
  executing(promptId: string, node: string): Promise<void> {
    return this.until(`node ${node} of ${this.labels.get(promptId) ?? promptId}`, (frames) =>
      frames.some((f) => f.type === "executing" && f.data["node"] === node && f.data["prompt_id"] === promptId))
  }

  /** One HTTP exchange, recorded. A JSON body is sent as JSON, a FormData as multipart. */
  async request(method: "GET" | "POST", path: string, body?: unknown): Promise<{ readonly status: number; readonly json: unknown }> {
    const init: RequestInit = { method }
    if (body instanceof FormData) init.body = body
    else if (body !== undefined) init.body = JSON.stringify(body)
    const res = await fetch(this.base + path, init)
    const bytes = Buffer.from(await res.arrayBuffer())
    const type = res.headers.get("content-type")
    let json: unknown = undefined
    let answer: unknown
    if (type?.startsWith("application/json") === true) {
      json = JSON.parse(bytes.toString("utf8")) as unknown
      answer = this.normalise(json)
    } else {
      // Files: their signature is what a client relies on (PNG, RIFF....WEBP, ....ftyp of MP4); sizes differ between encoders.
      answer = bytes.length === 0 ? "" : { magic: fileMagic(bytes) }
    }
    this.exchanges.push({
      request: `${method} ${this.normalisePath(path)}`,
      ...(body === undefined ? {} : { body: body instanceof FormData ? "<multipart>" : this.normalise(body) }),
      status: res.status,
      content_type: type?.split(";")[0] ?? null,
      answer
    })
    return { status: res.status, json }
  }

  /** Uploads `bytes` as `name` to `input/<subfolder>`. */
  upload(name: string, bytes: Uint8Array, subfolder: string) {
    const form = new FormData()
    form.append("image", new Blob([new Uint8Array(bytes)]), name)
    form.append("type", "input")
    form.append("subfolder", subfolder)
    return this.request("POST", "/upload/image", form)
  }

  /** Submits `prompt` under `promptId` for this client. */
  submit(promptId: string, prompt: unknown) {
    return this.request("POST", "/prompt", { prompt, prompt_id: promptId, client_id: this.clientId })
  }

  close(): Promise<void> {
    const ws = this.socket
    return new Promise((resolve) => {
      if (ws === undefined || ws.readyState === WebSocket.CLOSED) return resolve()
      ws.once("close", () => resolve())
      ws.close()
    })
  }

  recording(scenario: string): Recording {
    return { scenario, http: this.exchanges, ws: this.frames }
  }

  private normalisePath(path: string): string {
    const [p, query] = path.split("?")
    const params = new URLSearchParams(query ?? "")
    const q = [...params].map(([k, v]) => `${k}=${this.normaliseString(v)}`).join("&")
    return this.normaliseString(p ?? "") + (q === "" ? "" : `?${q}`)
  }

  private normaliseString(s: string): string {
    let out = s
    for (const [id, label] of this.labels) out = out.split(id).join(label)
    return out
      .split(this.run).join("<run>")
      // PreviewImage's random temp prefix.
      .replace(/_temp_[a-z]{5}_/g, "_temp_<rand>_")
      // Absolute paths of the server's directories (they differ per machine and per fake).
      .replace(/(?:[A-Za-z]:)?[/\\][^'"\s]*?[/\\](input|output|temp)[/\\]/g, "<$1>/")
  }

  /** Replaces ids, timestamps, numbers, random names, paths and tracebacks with placeholders. */
  normalise(value: unknown, key?: string): unknown {
    if (key !== undefined && key in PLACEHOLDER_KEYS && typeof value === "number") return PLACEHOLDER_KEYS[key]
    if (key === "traceback" && Array.isArray(value)) return "<traceback>"
    if (key !== undefined && SET_KEYS.has(key) && Array.isArray(value)) return sorted(value.map((v) => this.normalise(v)))
    if (typeof value === "string") return this.normaliseString(value)
    if (Array.isArray(value)) {
      // A queue item or history `prompt`: [number, prompt_id, prompt, extra_data, outputs].
      if (value.length === 5 && typeof value[0] === "number" && typeof value[1] === "string" && this.labels.has(value[1])) {
        const [, id, prompt, extra, outputs] = value.map((v) => this.normalise(v))
        return ["<number>", id, prompt, extra, Array.isArray(outputs) ? sorted(outputs) : outputs]
      }
      return value.map((v) => this.normalise(v))
    }
    if (typeof value === "object" && value !== null) {
      const out: Record<string, unknown> = {}
      for (const [k, v] of Object.entries(value)) out[this.normaliseString(k)] = this.normalise(v, k)
      return out
    }
    return value
  }
}
