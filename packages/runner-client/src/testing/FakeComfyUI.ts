/**
 * A fake ComfyUI server for tests: real HTTP and WebSocket on 127.0.0.1, behaving as
 * comfyui-protocol.md describes (section 11 checklist), with hooks to inject the failures a
 * client must survive (slow or failing HTTP, dropped or silent sockets, restarts, refused
 * connections, failing nodes) and logs of what it received.
 */
import * as crypto from "node:crypto"
import { setMaxListeners } from "node:events"
import * as http from "node:http"
import type * as net from "node:net"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { type WebSocket, WebSocketServer } from "ws"
import { Abandoned, Executor, type InjectedFailure, Notifier, sleep } from "./Executor.js"
import { FileStore } from "./Files.js"
import { viewGenerated } from "./LargeOutputs.js"
import { streamUpload } from "./StreamedUpload.js"
import { PromptQueue, type QueueItem } from "./PromptQueue.js"
import type {
  FakeComfyUIOptions,
  NodeFailure,
  ObjectInfoOptions,
  PromptSubmission,
  RequestRecord,
  RestartOptions,
  UploadRecord
} from "./FakeOptions.js"
import { missingHeader, originMismatch, readBody, writeReply } from "./HttpPlumbing.js"
import { type NodeReplace, registered } from "./NodeReplacements.js"
import { dispatch, plain, type RouteHost, serverError, serverFeatures } from "./Routes.js"
import { type ConnectionRecord, SocketHub } from "./SocketHub.js"

export type * from "./FakeOptions.js"
export type { NodeReplace } from "./NodeReplacements.js"
export type { ConnectionRecord } from "./SocketHub.js"

const capped = <A>(log: Array<A>, limit: number, entry: A): void => {
  log.push(entry)
  if (log.length > limit) log.splice(0, log.length - limit)
}

/**
 * The signal that ends with the fake's process (stop, restart). Each request that `slowHttp`
 * holds listens on it while it waits, so it may have more listeners than Node's default of 10
 * (one per request in flight) without a leak.
 */
const lifetime = (): AbortController => {
  const controller = new AbortController()
  setMaxListeners(0, controller.signal)
  return controller
}

export class FakeComfyUI {
  /** Base URL, e.g. `http://127.0.0.1:40123`. */
  readonly url: string
  private readonly queue: PromptQueue
  private readonly hub = new SocketHub()
  private readonly notifier = new Notifier()
  private readonly executor: Executor
  private readonly wss = new WebSocketServer({ noServer: true, autoPong: false })
  private readonly connections = new Set<net.Socket>()
  private readonly stateListeners = new Set<() => void>()
  private readonly failures: Array<NodeFailure> = []
  private readonly promptDelays = new Map<string, number>()
  private readonly prompts: Array<PromptSubmission> = []
  private readonly uploadLog: Array<UploadRecord> = []
  private readonly requestLog: Array<RequestRecord> = []
  private readonly connectionLog: Array<ConnectionRecord> = []
  private abort = lifetime()
  private number = 0
  private nodeDelayMs: number
  private requiredHeaders: Readonly<Record<string, string>>
  private httpFailure: number | undefined
  private httpDelayMs = 0
  private upgradeDelayMs = 0
  private answerAfter: "started" | "finished" | undefined
  private refusing: "close" | "reset" | undefined
  private objectInfo: ObjectInfoOptions
  private version: string
  private jobsApi: boolean
  private replacements: ReadonlyMap<string, ReadonlyArray<NodeReplace>> | undefined
  private held = false
  private workerPaused = false
  private pendingFree = false
  private closed = false

  private constructor(
    private readonly server: http.Server,
    readonly port: number,
    readonly files: FileStore,
    private readonly options: FakeComfyUIOptions
  ) {
    this.url = `http://127.0.0.1:${port}`
    this.hub.observer = options.onMessage
    this.queue = new PromptQueue(options.maxHistory ?? 10_000)
    this.nodeDelayMs = options.nodeDelayMs ?? 0
    this.requiredHeaders = options.requiredHeaders ?? {}
    this.objectInfo = options.objectInfo ?? {}
    this.version = options.version ?? "0.3.64"
    this.jobsApi = options.jobsApi ?? false
    this.replacements = options.nodeReplacements === undefined ? undefined : registered(options.nodeReplacements)
    const cache = options.cache ?? true
    this.executor = new Executor({
      files,
      hub: this.hub,
      previews: options.previews ?? false,
      cache: () => cache,
      nodeDelay: (promptId) => this.promptDelays.get(promptId) ?? this.nodeDelayMs,
      injectedFailure: (promptId, nodeId, classType) => this.injectedFailure(promptId, nodeId, classType),
      held: () => this.held,
      notifier: this.notifier
    })
    server.on("request", (req, res) => {
      this.handle(req, res).catch((e: unknown) => {
        console.error("fake ComfyUI: request failed", e)
        if (!res.headersSent) writeReply(res, serverError)
        else res.destroy()
      })
    })
    server.on("upgrade", (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => this.upgrade(req, socket, head))
    server.on("connection", (socket: net.Socket) => {
      if (this.refusing !== undefined) {
        socket.destroy()
        return
      }
      this.connections.add(socket)
      socket.on("close", () => this.connections.delete(socket))
    })
    void this.work(this.abort.signal)
  }

  /** Starts a fake listening on 127.0.0.1 (a random port unless `options.port`). */
  static async start(options: FakeComfyUIOptions = {}): Promise<FakeComfyUI> {
    const files = await FileStore.create(options.rootDir)
    const server = http.createServer({ keepAliveTimeout: 5_000 })
    const port = await new Promise<number>((resolve, reject) => {
      server.once("error", reject)
      server.listen(options.port ?? 0, "127.0.0.1", () => {
        server.off("error", reject)
        resolve((server.address() as net.AddressInfo).port)
      })
    })
    return new FakeComfyUI(server, port, files, options)
  }

  /** The fake as a scoped resource: listening once acquired, closed when the scope closes. */
  static scoped(options: FakeComfyUIOptions = {}): Effect.Effect<FakeComfyUI, never, Scope.Scope> {
    return Effect.acquireRelease(
      Effect.promise(() => FakeComfyUI.start(options)),
      (fake) => Effect.promise(() => fake.close())
    )
  }

  /** WebSocket URL (`ws://127.0.0.1:port/ws?clientId=...`). */
  wsUrl(clientId?: string): string {
    return `ws://127.0.0.1:${this.port}/ws${clientId === undefined ? "" : `?clientId=${encodeURIComponent(clientId)}`}`
  }

  /** Stops everything: the worker, every connection, the listener; deletes its temporary directory. */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.abort.abort()
    this.notifier.notify()
    this.hub.dropAll()
    this.wss.close()
    await this.stopListening()
    await this.files.remove()
  }

  // ---------------------------------------------------------------- logs and state

  /** Every `POST /prompt` handled, oldest first. */
  get submissions(): ReadonlyArray<PromptSubmission> {
    return this.prompts
  }

  /** Every `POST /upload/image` handled, oldest first. */
  get uploads(): ReadonlyArray<UploadRecord> {
    return this.uploadLog
  }

  /** Every HTTP request received (method, path, headers), oldest first. */
  get requests(): ReadonlyArray<RequestRecord> {
    return this.requestLog
  }

  /** Every WebSocket connection accepted (client id and upgrade headers), oldest first. */
  get wsConnections(): ReadonlyArray<ConnectionRecord> {
    return this.connectionLog
  }

  /** Client ids with a registered WebSocket right now. */
  get connectedClients(): ReadonlyArray<string> {
    return this.hub.sids()
  }

  /** The running prompt id, the pending ids in execution order, and the ids in history. */
  get state(): { readonly running: string | null; readonly pending: ReadonlyArray<string>; readonly history: ReadonlyArray<string> } {
    return {
      running: this.queue.running?.[1] ?? null,
      pending: [...this.queue.heap].sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)).map((i) => i[1]),
      history: [...this.queue.history.keys()]
    }
  }

  /** Resolves once `predicate` holds (checked on every queue change and WebSocket connection or close), or rejects after `timeoutMs`. */
  waitUntil(predicate: () => boolean, timeoutMs = 10_000, what = "condition"): Promise<void> {
    if (predicate()) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!predicate()) return
        cleanup()
        resolve()
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(new Error(`fake ComfyUI: timed out after ${timeoutMs} ms waiting for ${what}`))
      }, timeoutMs)
      const cleanup = () => {
        clearTimeout(timer)
        this.stateListeners.delete(check)
      }
      this.stateListeners.add(check)
    })
  }

  /** Resolves once `promptId` is the running prompt. */
  whenRunning(promptId: string, timeoutMs?: number): Promise<void> {
    return this.waitUntil(() => this.queue.running?.[1] === promptId, timeoutMs, `${promptId} to run`)
  }

  /** Resolves once `promptId` has a history entry. */
  whenFinished(promptId: string, timeoutMs?: number): Promise<void> {
    return this.waitUntil(() => this.queue.history.has(promptId), timeoutMs, `${promptId} to finish`)
  }

  private changed(): void {
    for (const l of [...this.stateListeners]) l()
  }

  // ---------------------------------------------------------------- fault hooks

  /** Every non-cached node takes `ms` before it runs; for one prompt only when `promptId` is given. */
  setExecutionDelay(ms: number, promptId?: string): void {
    if (promptId === undefined) this.nodeDelayMs = ms
    else this.promptDelays.set(promptId, ms)
  }

  /** Nodes stop before running until `release` (an interrupt still ends the prompt). */
  hold(): void {
    this.held = true
  }

  /** Lets held nodes run. */
  release(): void {
    this.held = false
    this.notifier.notify()
  }

  /** The worker takes no new prompt from the queue until `resumeQueue`. */
  pauseQueue(): void {
    this.workerPaused = true
  }

  resumeQueue(): void {
    this.workerPaused = false
    this.notifier.notify()
  }

  /** Makes matching node executions fail with an `execution_error`. */
  failNode(failure: NodeFailure = {}): void {
    this.failures.push(failure)
  }

  clearFailures(): void {
    this.failures.length = 0
  }

  private injectedFailure(promptId: string, nodeId: string, classType: string): InjectedFailure | undefined {
    const i = this.failures.findIndex((f) =>
      (f.promptId === undefined || f.promptId === promptId) &&
      (f.nodeId === undefined || f.nodeId === nodeId) &&
      (f.classType === undefined || f.classType === classType)
    )
    if (i < 0) return undefined
    const f = this.failures[i]!
    if (f.once === true) this.failures.splice(i, 1)
    return { exception_type: f.exceptionType ?? "RuntimeError", exception_message: f.exceptionMessage ?? "injected failure" }
  }

  /** Sends an arbitrary frame (text or binary) to one client or to all, like a custom node could. */
  sendRaw(payload: string | Buffer, clientId?: string): void {
    this.hub.sendRaw(payload, clientId)
  }

  /** Closes every WebSocket abruptly (TCP reset, no close frame). */
  dropWebSockets(): void {
    this.hub.dropAll()
  }

  /** Keeps the open WebSockets open but sends nothing on them, not even pongs (a half-open connection). New ones are normal. */
  silenceWebSockets(): void {
    this.hub.silenceAll()
  }

  /** Ends `silenceWebSockets`. */
  unsilenceWebSockets(): void {
    this.hub.unsilenceAll()
  }

  /**
   * Changes the version and what comes with it (as a ComfyUI upgraded or downgraded, then
   * restarted, would answer): fields left out keep their value; `nodeReplacements: null` removes the route.
   */
  setVersion(change: {
    readonly version?: string
    readonly jobsApi?: boolean
    readonly nodeReplacements?: ReadonlyArray<NodeReplace> | null
  }): void {
    if (change.version !== undefined) this.version = change.version
    if (change.jobsApi !== undefined) this.jobsApi = change.jobsApi
    if (change.nodeReplacements !== undefined) {
      this.replacements = change.nodeReplacements === null ? undefined : registered(change.nodeReplacements)
    }
  }

  /** Changes the loaded classes and what `/object_info` says (as a ComfyUI restarted with other nodes or models would). */
  setObjectInfo(objectInfo: ObjectInfoOptions): void {
    this.objectInfo = objectInfo
  }

  /** Answers every HTTP request (and WebSocket upgrade) with `status` until `restoreHttp`. */
  failHttp(status = 500): void {
    this.httpFailure = status
  }

  /** Delays every HTTP answer by `ms` until `restoreHttp`. */
  slowHttp(ms: number): void {
    this.httpDelayMs = ms
  }

  /** Delays every WebSocket upgrade by `ms` (a proxy slow to open sockets) until `restoreHttp`. */
  slowUpgrades(ms: number): void {
    this.upgradeDelayMs = ms
  }

  /** Ends `failHttp`, `slowHttp` and `slowUpgrades`. */
  restoreHttp(): void {
    this.httpFailure = undefined
    this.httpDelayMs = 0
    this.upgradeDelayMs = 0
  }

  /**
   * The 200 answer of each `POST /prompt` goes out only once the prompt it queued has left the
   * pending queue (`started`: its `execution_start` is sent first) or has finished (`finished`:
   * its history is written and `executing {node: null}` sent first), or was deleted. An idle
   * ComfyUI starts a prompt as it answers, so its WebSocket may say so before the answer
   * arrives; this makes the answer lose that race every time. `undefined` ends it.
   */
  answerPromptsAfter(stage: "started" | "finished" | undefined): void {
    this.answerAfter = stage
  }

  private answerReady(promptId: string): Promise<void> {
    const stage = this.answerAfter
    if (stage === undefined) return Promise.resolve()
    const pending = () => this.queue.heap.some((item) => item[1] === promptId)
    return this.waitUntil(
      () => !pending() && (stage === "started" || this.queue.running?.[1] !== promptId),
      60_000,
      `${promptId} to be ${stage} before answering its POST /prompt`
    )
  }

  /** Requires these headers on every request and upgrade (401 without them); `{}` to stop. */
  requireHeaders(headers: Readonly<Record<string, string>>): void {
    this.requiredHeaders = headers
  }

  /**
   * Refuses connections until `acceptConnections`, dropping the open ones: `close` (default)
   * stops listening (ECONNREFUSED); `reset` accepts and immediately destroys (ECONNRESET).
   */
  async refuseConnections(mode: "close" | "reset" = "close"): Promise<void> {
    this.refusing = mode
    this.hub.dropAll()
    if (mode === "close") await this.stopListening()
    else for (const s of this.connections) s.destroy()
  }

  /** Listens again on the same port. */
  async acceptConnections(): Promise<void> {
    const wasClosed = this.refusing === "close"
    this.refusing = undefined
    if (!wasClosed || this.closed) return
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject)
      this.server.listen(this.port, "127.0.0.1", () => {
        this.server.off("error", reject)
        resolve()
      })
    })
  }

  /**
   * A process restart: every connection drops, the running prompt vanishes, and queue, history,
   * the priority counter, the cache and temp files are lost (input/ and output/ stay).
   */
  async restart(options: RestartOptions = {}): Promise<void> {
    this.abort.abort()
    this.notifier.notify()
    await this.refuseConnections("close")
    this.abort = lifetime()
    this.queue.reset()
    this.number = 0
    this.executor.resetCache()
    this.executor.clientId = undefined
    this.executor.lastNodeId = undefined
    this.promptDelays.clear()
    this.pendingFree = false
    await this.files.wipeTemp()
    if ((options.downtimeMs ?? 0) > 0) await new Promise((r) => setTimeout(r, options.downtimeMs))
    await this.acceptConnections()
    void this.work(this.abort.signal)
    this.changed()
  }

  private stopListening(): Promise<void> {
    for (const s of this.connections) s.destroy()
    if (!this.server.listening) return Promise.resolve()
    return new Promise((resolve) => this.server.close(() => resolve()))
  }

  // ---------------------------------------------------------------- the worker

  private queueInfo() {
    return { exec_info: { queue_remaining: this.queue.remaining() } }
  }

  private broadcastStatus(): void {
    this.hub.sendJson("status", { status: this.queueInfo() })
  }

  private async work(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      if (this.queue.heap.length === 0 || this.workerPaused) {
        await this.notifier.wait()
        continue
      }
      try {
        await this.runNext(signal)
      } catch (e) {
        if (e instanceof Abandoned) return
        // A bug in the fake itself: say so loudly, free the slot and keep serving.
        console.error("fake ComfyUI: executing a prompt failed", e)
        this.queue.running = undefined
        this.changed()
      }
    }
  }

  /** `prompt_worker`: take, execute, `task_done` (history, then status), then `executing {node: null}`. */
  private async runNext(signal: AbortSignal): Promise<void> {
    const item = this.queue.take()!
    this.broadcastStatus()
    this.changed()
    const result = await this.executor.execute(item, signal)
    if (signal.aborted) return
    const [number, promptId, prompt, extraData, outputs] = item
    this.queue.done({
      prompt: [number, promptId, prompt, extraData, outputs],
      outputs: result.outputs,
      status: { status_str: result.success ? "success" : "error", completed: result.success, messages: result.messages },
      meta: result.meta
    })
    this.broadcastStatus()
    const client = this.executor.clientId
    if (client !== undefined) this.hub.sendJson("executing", { node: null, prompt_id: promptId }, client)
    if (this.pendingFree) {
      this.pendingFree = false
      this.executor.resetCache()
    }
    this.changed()
  }

  // ---------------------------------------------------------------- HTTP and WebSocket

  private host(): RouteHost {
    return {
      files: this.files,
      queue: this.queue,
      executor: this.executor,
      settings: {
        promptIdMode: this.options.promptIdMode ?? "uuid",
        createTime: this.options.createTime ?? false,
        unknownNodeError: this.options.unknownNodeError ?? "invalid_prompt",
        version: this.version,
        jobsApi: this.jobsApi,
        nodeReplacements: this.replacements,
        maxUploadBytes: this.maxUploadBytes(),
        mimeTypes: this.options.mimeTypes ?? "system",
        loaded: (name) => this.objectInfo.nodes === undefined || this.objectInfo.nodes.includes(name),
        objectInfo: this.objectInfo
      },
      nextNumber: () => this.number++,
      enqueue: (item: QueueItem) => {
        try {
          this.queue.push(item)
        } finally {
          this.broadcastStatus()
          this.notifier.notify()
          this.changed()
        }
      },
      broadcastStatus: () => {
        this.broadcastStatus()
        this.changed()
      },
      interrupt: (promptId) => {
        // Before 0.3.57 the body is ignored: every interrupt stops whatever runs.
        const global = promptId === undefined || this.options.globalInterrupt === true
        if (global || this.queue.running?.[1] === promptId) this.executor.interrupt()
      },
      interruptIfRunning: (promptId) => {
        if (this.queue.running?.[1] !== promptId) return false
        this.executor.interrupt()
        return true
      },
      dequeue: (promptId) => {
        const broadcasts = this.queue.delete(promptId)
        for (let n = broadcasts; n > 0; n--) this.broadcastStatus()
        if (broadcasts > 0) this.changed()
        return broadcasts > 0
      },
      freeMemory: () => {
        if (this.queue.running === undefined) this.executor.resetCache()
        else this.pendingFree = true
      },
      recordSubmission: (entry) => {
        const submission = { ...entry, at: Date.now(), received: performance.now() }
        capped(this.prompts, this.logLimit(), submission)
        this.options.onSubmission?.(submission)
      },
      recordUpload: (entry) => capped(this.uploadLog, this.logLimit(), { ...entry, at: Date.now() }),
      answerReady: (promptId) => this.answerReady(promptId)
    }
  }

  private logLimit(): number {
    return this.options.logLimit ?? 10_000
  }

  private maxUploadBytes(): number {
    return this.options.maxUploadBytes ?? 100 * 1024 * 1024
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake")
    capped(this.requestLog, this.logLimit(), { method: req.method ?? "GET", path: url.pathname + url.search, headers: req.headers, at: Date.now() })
    if (this.httpDelayMs > 0) await sleep(this.httpDelayMs, this.abort.signal).catch(() => undefined)
    if (missingHeader(req.headers, this.requiredHeaders)) {
      req.resume()
      return writeReply(res, plain(401, "401: Unauthorized"))
    }
    if (this.httpFailure !== undefined) {
      req.resume()
      return writeReply(res, this.httpFailure === 500 ? serverError : plain(this.httpFailure, `${this.httpFailure}: injected failure`))
    }
    if (originMismatch(req.headers)) {
      req.resume()
      return writeReply(res, { status: 403 })
    }
    if (req.method === "GET" && (url.pathname === "/view" || url.pathname === "/api/view") && await viewGenerated(this.files, url, res)) return
    if (this.options.streamUploads === true && req.method === "POST" && (url.pathname === "/upload/image" || url.pathname === "/api/upload/image")) {
      const answer = await streamUpload(req, this.files, (entry) => capped(this.uploadLog, this.logLimit(), { ...entry, at: Date.now() }))
      return writeReply(res, { status: answer.status, headers: { "content-type": "application/json" }, body: answer.body })
    }
    const body = await readBody(req, this.maxUploadBytes())
    if (body === undefined) {
      return writeReply(res, plain(413, `413: Request Entity Too Large`))
    }
    const r = await dispatch(this.host(), url.pathname, {
      method: req.method ?? "GET",
      query: url.searchParams,
      headers: req.headers,
      body
    })
    writeReply(res, r)
  }

  private upgrade(req: http.IncomingMessage, socket: net.Socket, head: Buffer): void {
    const url = new URL(req.url ?? "/", "http://fake")
    const refuse = (status: number, text: string) => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`)
    }
    capped(this.requestLog, this.logLimit(), { method: "GET", path: url.pathname + url.search, headers: req.headers, at: Date.now() })
    if (this.refusing !== undefined) return void socket.destroy()
    if (url.pathname !== "/ws" && url.pathname !== "/api/ws") return refuse(404, "Not Found")
    if (missingHeader(req.headers, this.requiredHeaders)) return refuse(401, "Unauthorized")
    if (this.httpFailure !== undefined) return refuse(this.httpFailure, "Injected Failure")
    if (originMismatch(req.headers)) return refuse(403, "Forbidden")
    const accept = () => this.wss.handleUpgrade(req, socket, head, (ws) => this.connected(ws, url, req.headers))
    if (this.upgradeDelayMs === 0) return accept()
    void sleep(this.upgradeDelayMs, this.abort.signal).then(() => {
      if (!socket.destroyed) accept()
    }, () => socket.destroy())
  }

  private connected(ws: WebSocket, url: URL, headers: http.IncomingHttpHeaders): void {
    const sid = url.searchParams.get("clientId") || crypto.randomUUID().replace(/-/g, "")
    capped(this.connectionLog, this.logLimit(), { client_id: sid, headers, at: Date.now() })
    this.hub.attach(ws, sid)
    // `waitUntil` conditions on connections are checked when one closes too.
    ws.on("close", () => this.changed())
    this.hub.sendJson("status", { status: this.queueInfo(), sid }, sid)
    if (this.executor.clientId === sid && this.executor.lastNodeId !== undefined) {
      this.hub.sendJson("executing", { node: this.executor.lastNodeId }, sid)
    }
    let first = true
    ws.on("message", (data, isBinary) => {
      if (isBinary) return
      let msg: unknown
      try {
        msg = JSON.parse(String(data))
      } catch {
        return // ComfyUI logs invalid JSON and keeps waiting for a first message
      }
      if (typeof msg !== "object" || msg === null || Array.isArray(msg)) return
      const m = msg as Record<string, unknown>
      if (first && m.type === "feature_flags") {
        this.hub.setFlags(sid, typeof m.data === "object" && m.data !== null ? m.data as Record<string, unknown> : {})
        this.hub.sendJson("feature_flags", serverFeatures(this.maxUploadBytes()), sid)
      }
      first = false
    })
    this.changed()
  }
}

/** The fake as a service, for `layer(...)`-style tests. */
export class FakeComfyUIServer extends Context.Service<
  FakeComfyUIServer,
  FakeComfyUI
>()("@wes/runner-client/testing/FakeComfyUIServer") {
  /** A fake started when the layer is built and closed when it is released. */
  static layer = (options: FakeComfyUIOptions = {}): Layer.Layer<FakeComfyUIServer> =>
    Layer.effect(FakeComfyUIServer, FakeComfyUI.scoped(options))
}
