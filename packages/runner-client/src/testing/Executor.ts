/**
 * Runs one queued prompt the way ComfyUI's `PromptExecutor` does (execution.py, main.py,
 * comfy_execution/progress.py): the cross-prompt output cache, the staging order, the WebSocket
 * messages in their order and routing (comfyui-protocol.md section 6), cooperative interruption
 * (before each node and at progress steps) and the history result.
 */
import type { FileStore } from "./Files.js"
import { describeValue, NODES } from "./Nodes.js"
import type { NodeContext, NodeResult, NodeUi } from "./NodeTypes.js"
import type { QueueItem } from "./PromptQueue.js"
import { PyError, pyStr } from "./Python.js"
import type { SocketHub } from "./SocketHub.js"

/** Thrown into a run that a restart or close of the fake abandoned: it ends without a trace. */
export class Abandoned extends Error {}

class Interrupted extends Error {}

/** Resolves waiters on the next `notify` (interrupts, releases, aborts). */
export class Notifier {
  private waiters: Array<() => void> = []
  wait(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve))
  }
  notify(): void {
    const ws = this.waiters
    this.waiters = []
    for (const w of ws) w()
  }
}

/** Waits `ms` unless `signal` aborts first (then rejects with `Abandoned`). */
export const sleep = (ms: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Abandoned())
    const onAbort = () => {
      clearTimeout(timer)
      reject(new Abandoned())
    }
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort)
      resolve()
    }, Math.max(0, ms))
    signal.addEventListener("abort", onAbort, { once: true })
  })

/** A node failure injected by a test (see `FakeComfyUI.failNode`). */
export interface InjectedFailure {
  readonly exception_type: string
  readonly exception_message: string
}

/** What the executor asks of the server around it. */
export interface ExecutorHost {
  readonly files: FileStore
  readonly hub: SocketHub
  readonly previews: boolean
  readonly cache: () => boolean
  /** Milliseconds a non-cached node of this prompt takes before it runs (not interruptible). */
  readonly nodeDelay: (promptId: string) => number
  readonly injectedFailure: (promptId: string, nodeId: string, classType: string) => InjectedFailure | undefined
  /** Whether nodes are being held (see `FakeComfyUI.hold`). */
  readonly held: () => boolean
  /** Notified on interrupts, releases, restarts and close. */
  readonly notifier: Notifier
}

interface CacheEntry {
  readonly outputs: ReadonlyArray<unknown>
  readonly ui: NodeUi | undefined
}

/** The outcome of one prompt, ready for `task_done`. */
export interface ExecutionResult {
  readonly success: boolean
  readonly messages: Array<readonly [string, Record<string, unknown>]>
  readonly outputs: Record<string, unknown>
  readonly meta: Record<string, unknown>
}

const isLink = (v: unknown): v is readonly [string, number] =>
  Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "number"

const formatValue = (v: unknown): unknown =>
  v === null || v === undefined ? null : ["number", "boolean", "string"].includes(typeof v) ? v : describeValue(v)

type Graph = Readonly<Record<string, { readonly class_type: string; readonly inputs: Readonly<Record<string, unknown>> }>>

export class Executor {
  /** `server.client_id`: the client of the running prompt (undefined when it had none). */
  clientId: string | undefined
  /** `server.last_node_id`: the node last announced with `executing`. */
  lastNodeId: string | undefined
  private interruptFlag = false
  private readonly cache = new Map<string, CacheEntry>()

  constructor(private readonly host: ExecutorHost) {}

  /** `nodes.interrupt_processing()`: checked before each node and at progress steps; reset when a prompt starts. */
  interrupt(): void {
    this.interruptFlag = true
    this.host.notifier.notify()
  }

  /** `POST /free {"free_memory": true}` and restarts: forget every cached output. */
  resetCache(): void {
    this.cache.clear()
  }

  /** Runs `item`; throws `Abandoned` when `signal` aborts. */
  async execute(item: QueueItem, signal: AbortSignal): Promise<ExecutionResult> {
    const [, promptId, rawPrompt, extraData, outputIds] = item
    const prompt = rawPrompt as Graph
    const host = this.host
    const guard = () => {
      if (signal.aborted) throw new Abandoned()
    }
    this.interruptFlag = false
    this.clientId = "client_id" in extraData ? pyStr(extraData.client_id) : undefined
    const client = this.clientId
    const messages: Array<readonly [string, Record<string, unknown>]> = []
    const send = (type: string, data: unknown, to: string | undefined) => {
      guard()
      host.hub.sendJson(type, data, to)
    }
    const addMessage = (event: string, data: Record<string, unknown>, broadcast: boolean) => {
      const stamped = { ...data, timestamp: Date.now() }
      messages.push([event, stamped])
      if (client !== undefined || broadcast) send(event, stamped, client)
    }

    addMessage("execution_start", { prompt_id: promptId }, false)

    const signatures = await this.signatures(prompt)
    guard()
    if (host.cache()) {
      const used = new Set(signatures.values())
      for (const key of [...this.cache.keys()]) if (!used.has(key)) this.cache.delete(key)
    } else this.cache.clear()
    const cachedOf = (id: string) => host.cache() ? this.cache.get(signatures.get(id)!) : undefined
    const cachedNodes = Object.keys(prompt).filter((id) => cachedOf(id) !== undefined)
    addMessage("execution_cached", { nodes: cachedNodes, prompt_id: promptId }, false)

    // Progress registry: nodes in the order they started, pending ones omitted.
    const progress = new Map<string, { state: "running" | "finished"; value: number; max: number }>()
    const sendProgressState = () => {
      const nodes: Record<string, unknown> = {}
      for (const [id, p] of progress) {
        nodes[id] = {
          value: p.value, max: p.max, state: p.state, node_id: id, prompt_id: promptId,
          display_node_id: id, parent_node_id: null, real_node_id: id
        }
      }
      send("progress_state", { prompt_id: promptId, nodes }, client)
    }
    const finish = (id: string) => {
      const p = progress.get(id) ?? { state: "finished", value: 0, max: 1 }
      progress.set(id, { state: "finished", value: p.max, max: p.max })
      sendProgressState()
    }

    // Staging: outputs and their uncached ancestors, ancestors first.
    const order: Array<string> = []
    const seen = new Set<string>()
    const stage = (id: string) => {
      if (seen.has(id)) return
      seen.add(id)
      for (const v of Object.values(prompt[id]!.inputs)) {
        if (isLink(v) && cachedOf(v[0]) === undefined) stage(v[0])
      }
      order.push(id)
    }
    for (const o of outputIds) stage(o)

    const values = new Map<string, ReadonlyArray<unknown>>()
    const ui = new Map<string, { meta: Record<string, unknown>; output: NodeUi }>()
    const executed: Array<string> = []
    const metaOf = (id: string) => ({ node_id: id, display_node: id, parent_node: null, real_node_id: id })
    let success = true

    for (const id of order) {
      const node = prompt[id]!
      const def = NODES.get(node.class_type)!
      const cached = cachedOf(id)
      if (cached !== undefined) {
        if (client !== undefined) {
          send("executed", { node: id, display_node: id, output: cached.ui ?? null, prompt_id: promptId }, client)
        }
        if (cached.ui !== undefined) ui.set(id, { meta: metaOf(id), output: cached.ui })
        values.set(id, cached.outputs)
        finish(id)
        continue
      }

      progress.set(id, { state: "running", value: 0, max: 1 })
      sendProgressState()
      const inputs: Record<string, unknown> = {}
      for (const name of [...Object.keys(def.required), ...Object.keys(def.optional ?? {})]) {
        if (!(name in node.inputs)) continue
        const v = node.inputs[name]
        inputs[name] = isLink(v) ? (values.get(v[0]) ?? cachedOf(v[0])?.outputs)?.[v[1]] ?? null : v
      }
      if (client !== undefined) {
        send("executing", { node: id, display_node: id, prompt_id: promptId }, client)
        this.lastNodeId = id
      }

      const checkInterrupt = () => {
        if (this.interruptFlag) throw new Interrupted()
      }
      const ctx: NodeContext = {
        files: host.files,
        promptId,
        nodeId: id,
        prompt: rawPrompt,
        extraPngInfo: extraData.extra_pnginfo,
        previews: host.previews,
        sleep: (ms) => sleep(ms, signal),
        progress: (value, max, preview) => {
          guard()
          checkInterrupt()
          progress.set(id, { state: "running", value, max })
          sendProgressState()
          const modern = host.hub.supportsPreviewMetadata(client)
          if (preview !== undefined && modern) {
            const meta = Buffer.from(JSON.stringify({
              node_id: id, prompt_id: promptId, display_node_id: id, parent_node_id: null, real_node_id: id,
              image_type: "image/png"
            }))
            const len = Buffer.alloc(4)
            len.writeUInt32BE(meta.length, 0)
            host.hub.sendBinary(4, Buffer.concat([len, meta, preview]), client)
          }
          send("progress", { value, max, prompt_id: promptId, node: id }, client)
          if (preview !== undefined && !modern) {
            const format = Buffer.alloc(4)
            format.writeUInt32BE(2, 0) // PNG
            host.hub.sendBinary(1, Buffer.concat([format, preview]), client)
          }
          return Promise.resolve()
        }
      }

      let result: NodeResult
      try {
        checkInterrupt()
        const delay = host.nodeDelay(promptId)
        if (delay > 0) await sleep(delay, signal)
        while (host.held() && !this.interruptFlag) {
          await host.notifier.wait()
          guard()
        }
        guard()
        checkInterrupt()
        const injected = host.injectedFailure(promptId, id, node.class_type)
        if (injected !== undefined) throw new PyError(injected.exception_type, injected.exception_message)
        result = await def.run(inputs, ctx)
        guard()
      } catch (e) {
        if (e instanceof Abandoned) throw e
        guard()
        success = false
        if (e instanceof Interrupted) {
          addMessage("execution_interrupted", {
            prompt_id: promptId, node_id: id, node_type: node.class_type, executed: [...executed]
          }, true)
        } else {
          const ex = e instanceof PyError ? e : new PyError("RuntimeError", e instanceof Error ? e.message : String(e))
          const currentInputs: Record<string, unknown> = {}
          for (const [k, v] of Object.entries(inputs)) currentInputs[k] = [formatValue(v)]
          addMessage("execution_error", {
            prompt_id: promptId,
            node_id: id,
            node_type: node.class_type,
            executed: [...executed],
            exception_message: `${ex.message}\n`,
            exception_type: ex.pyType,
            traceback: ex.traceback(`nodes.py`),
            current_inputs: currentInputs,
            // `caches.outputs.all_node_ids()`: every node of the prompt, cached or not.
            current_outputs: Object.keys(prompt)
          }, false)
        }
        break
      }

      if (result.ui !== undefined && Object.keys(result.ui).length > 0) {
        ui.set(id, { meta: metaOf(id), output: result.ui })
        if (client !== undefined) {
          send("executed", { node: id, display_node: id, output: result.ui, prompt_id: promptId }, client)
        }
      }
      if (host.cache()) this.cache.set(signatures.get(id)!, { outputs: result.outputs, ui: result.ui })
      values.set(id, result.outputs)
      finish(id)
      executed.push(id)
    }

    if (success) addMessage("execution_success", { prompt_id: promptId }, false)
    this.lastNodeId = undefined
    const outputs: Record<string, unknown> = {}
    const meta: Record<string, unknown> = {}
    for (const [id, u] of ui) {
      outputs[id] = u.output
      meta[id] = u.meta
    }
    return { success, messages, outputs, meta }
  }

  /** Input signatures: class, `IS_CHANGED`, literal inputs and the signatures of linked ancestors. */
  private async signatures(prompt: Graph): Promise<Map<string, string>> {
    const sigs = new Map<string, string>()
    const changed = new Map<string, unknown>()
    for (const [id, node] of Object.entries(prompt)) {
      const def = NODES.get(node.class_type)!
      if (def.isChanged === undefined) continue
      try {
        changed.set(id, await def.isChanged(node.inputs, this.host.files))
      } catch {
        changed.set(id, "NaN") // ComfyUI stores float("NaN"), which never equals itself: never cached
      }
    }
    const sig = (id: string): string => {
      const known = sigs.get(id)
      if (known !== undefined) return known
      const node = prompt[id]!
      const inputs = Object.keys(node.inputs).sort().map((k) => {
        const v = node.inputs[k]
        return [k, isLink(v) && v[0] in prompt ? ["ANCESTOR", sig(v[0]), v[1]] : v]
      })
      const c = changed.get(id)
      const s = JSON.stringify([node.class_type, c === "NaN" ? `NaN:${Math.random()}` : c ?? false, inputs])
      sigs.set(id, s)
      return s
    }
    for (const id of Object.keys(prompt)) sig(id)
    return sigs
  }
}
