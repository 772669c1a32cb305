/** Options of the fake ComfyUI and the records of its logs. */
import type * as http from "node:http"
import type { NodeReplace } from "./NodeReplacements.js"

/** How the fake is started. Every field is optional. */
export interface FakeComfyUIOptions {
  /** Port on 127.0.0.1 (default 0: a random free port). */
  readonly port?: number
  /** Directory holding input/, output/ and temp/ (default: a fresh temporary directory, deleted on close). */
  readonly rootDir?: string
  /**
   * `uuid` (default; newer ComfyUI): a client prompt_id must be a canonical lowercase UUID.
   * `legacy` (0.3.45-0.3.64): any value is stringified. `ignored` (before 0.3.45): the server
   * always mints its own id.
   */
  readonly promptIdMode?: "uuid" | "legacy" | "ignored"
  /** `/interrupt` ignores its `prompt_id` and stops whatever runs, as before 0.3.57 (default false). */
  readonly globalInterrupt?: boolean
  /** Add `extra_data.create_time` to queued prompts as newer servers do (default false, as 0.3.64). */
  readonly createTime?: boolean
  /** Error type for unknown or missing class types: `invalid_prompt` (default; 0.3.64) or `missing_node_type` (newer). */
  readonly unknownNodeError?: "invalid_prompt" | "missing_node_type"
  /** Cross-prompt output cache (default true); false mimics `--cache-none`. */
  readonly cache?: boolean
  /** Progress-reporting nodes (FakeSleep) also send a binary preview per step (default false). */
  readonly previews?: boolean
  /** Milliseconds every non-cached node takes before it runs (default 0). */
  readonly nodeDelayMs?: number
  /** Headers a reverse proxy in front would require (401 without them), on HTTP and the WebSocket upgrade. */
  readonly requiredHeaders?: Readonly<Record<string, string>>
  /** `system.comfyui_version` of `/system_stats` (default "0.3.64"). */
  readonly version?: string
  /**
   * Newer ComfyUI's jobs API (`GET /api/jobs`, `GET /api/jobs/{id}`, `POST /api/jobs/{id}/cancel`,
   * `POST /api/jobs/cancel`; default false: absent, as in 0.3.64).
   */
  readonly jobsApi?: boolean
  /**
   * Newer ComfyUI's node replacements, as registered: `GET /node_replacements` lists them and
   * `POST /prompt` applies them before validating (default: no such route, as in 0.3.64).
   */
  readonly nodeReplacements?: ReadonlyArray<NodeReplace>
  /** Request body limit in bytes (default 100 MiB, ComfyUI's `--max-upload-size`); larger bodies get 413. */
  readonly maxUploadBytes?: number
  /**
   * `POST /upload/image` streams its file to disk, hashed on the way (StreamedUpload.ts), instead
   * of reading the body whole: for inputs of gigabytes (default false). `maxUploadBytes` does not apply.
   */
  readonly streamUploads?: boolean
  /**
   * The content types `/view` answers, from Python's `mimetypes` on the runner's machine: `system`
   * (default; a machine with `/etc/mime.types`) or `builtin` (Python 3.11's own table, as in a slim
   * container image: no type for `.flac`, `.mkv`, `.ogg`, `.m4a`, `.glb`).
   */
  readonly mimeTypes?: "system" | "builtin"
  /** History cap (default 10000, as ComfyUI). */
  readonly maxHistory?: number
  /** Entries kept per log (default 10000, oldest dropped first). */
  readonly logLimit?: number
  /** What `/object_info` offers (default: the whole catalogue, as ComfyUI 0.3.64 describes it). */
  readonly objectInfo?: ObjectInfoOptions
  /** Called as each WebSocket JSON message is sent (benchmarks time event delivery with it). */
  readonly onMessage?: (type: string, data: unknown) => void
  /** Called as each `POST /prompt` is answered (benchmarks time dispatch latency with it). */
  readonly onSubmission?: (submission: PromptSubmission) => void
}

/** The node classes the fake has loaded, and what `/object_info` says about them. */
export interface ObjectInfoOptions {
  /**
   * The catalogue's classes this server has loaded (default: all). The others are unknown to
   * `/object_info` and `/prompt` alike, as on a ComfyUI without them.
   */
  readonly nodes?: ReadonlyArray<string>
  /**
   * More classes for `/object_info`, served as given (model loaders with their file lists, custom
   * nodes); `/prompt` does not run them.
   */
  readonly extra?: Readonly<Record<string, unknown>>
  /** `/object_info` answers this status (500, ...) instead; the other routes work. */
  readonly failStatus?: number
}

/** A `POST /prompt` the fake handled. */
export interface PromptSubmission {
  /** The id the prompt got, or the one it asked for when rejected. */
  readonly prompt_id: string | null
  readonly client_id: string | null
  /** HTTP status of the answer (200, 400 or 500). */
  readonly status: number
  /** `error.type` of a rejection. */
  readonly error_type: string | null
  /** The request body as received. */
  readonly body: unknown
  readonly at: number
  /** `performance.now()` when it was handled (monotonic, sub-millisecond). */
  readonly received: number
}

/** A `POST /upload/image` the fake handled. */
export interface UploadRecord {
  /** The name the file was stored under (null when rejected). */
  readonly name: string | null
  readonly subfolder: string
  readonly type: string
  readonly size: number
  readonly overwrite: boolean
  readonly status: number
  readonly at: number
  /** The file's CRC-32 (zlib's), for a streamed upload (`streamUploads`). */
  readonly crc32?: number
}

/** Any HTTP request that reached the fake (faults included). */
export interface RequestRecord {
  readonly method: string
  readonly path: string
  readonly headers: http.IncomingHttpHeaders
  readonly at: number
}

/** Which node executions an injected failure hits; unset fields match everything. */
export interface NodeMatch {
  readonly promptId?: string
  readonly nodeId?: string
  readonly classType?: string
}

/** An injected node failure: the `execution_error` it produces and how often. */
export interface NodeFailure extends NodeMatch {
  /** Default `RuntimeError`. */
  readonly exceptionType?: string
  /** Default "injected failure". */
  readonly exceptionMessage?: string
  /** Fail only the first matching execution (default false: every one until `clearFailures`). */
  readonly once?: boolean
}

/** What `restart` does between losing its state and answering again. */
export interface RestartOptions {
  /** Milliseconds during which connections are refused (default 0). */
  readonly downtimeMs?: number
}

