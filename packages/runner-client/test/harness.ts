/**
 * Shared setup of the runner-client tests: a fake ComfyUI per test, a small HTTP helper, a
 * recording WebSocket client, and the runner target / gateway pointing at the fake.
 */
import { type RunnerTarget } from "@wes/core"
import { RunnerGatewayNode, type RunnerGatewayOptions } from "@wes/runner-client"
import { FakeComfyUI, type FakeComfyUIOptions } from "@wes/runner-client/testing"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import { afterEach } from "vitest"
import { WebSocket } from "ws"

/** Starts a fake for the current test; it is closed after the test. */
export const useFake = (() => {
  const open: Array<FakeComfyUI> = []
  afterEach(async () => {
    await Promise.all(open.splice(0).map((f) => f.close()))
  })
  return async (options: FakeComfyUIOptions = {}): Promise<FakeComfyUI> => {
    const fake = await FakeComfyUI.start(options)
    open.push(fake)
    return fake
  }
})()

export interface Answer {
  readonly status: number
  readonly text: string
  readonly headers: Headers
  readonly json: <A = Record<string, unknown>>() => A
}

const answer = async (r: Response): Promise<Answer> => {
  const text = await r.text()
  return { status: r.status, text, headers: r.headers, json: <A>() => JSON.parse(text) as A }
}

/** Plain HTTP against the fake (what a ComfyUI user would send). */
export const http = (fake: FakeComfyUI) => ({
  get: async (path: string, headers: Record<string, string> = {}) => answer(await fetch(`${fake.url}${path}`, { headers })),
  post: async (path: string, body: unknown, headers: Record<string, string> = {}) =>
    answer(await fetch(`${fake.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body)
    })),
  upload: async (fields: { image?: { name: string; bytes: Uint8Array }; type?: string; subfolder?: string; overwrite?: string }) => {
    const form = new FormData()
    if (fields.image !== undefined) form.append("image", new Blob([new Uint8Array(fields.image.bytes)]), fields.image.name)
    if (fields.type !== undefined) form.append("type", fields.type)
    if (fields.subfolder !== undefined) form.append("subfolder", fields.subfolder)
    if (fields.overwrite !== undefined) form.append("overwrite", fields.overwrite)
    return answer(await fetch(`${fake.url}/upload/image`, { method: "POST", body: form }))
  }
})

/** A JSON WebSocket message as received. */
export interface WsMessage {
  readonly type: string
  readonly data: Record<string, unknown>
}

/** A recording WebSocket client: JSON messages and binary frames in arrival order. */
export class WsClient {
  readonly messages: Array<WsMessage> = []
  readonly binary: Array<Buffer> = []
  private listeners = new Set<() => void>()
  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data, isBinary) => {
      if (isBinary) this.binary.push(Buffer.from(data as Buffer))
      else this.messages.push(JSON.parse(String(data)) as WsMessage)
      for (const l of [...this.listeners]) l()
    })
  }

  static connect(url: string, headers: Record<string, string> = {}): Promise<WsClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { headers })
      const client = new WsClient(ws)
      ws.once("open", () => resolve(client))
      ws.once("error", reject)
    })
  }

  /** Types of the JSON messages so far. */
  get types(): Array<string> {
    return this.messages.map((m) => m.type)
  }

  send(value: unknown): void {
    this.ws.send(JSON.stringify(value))
  }

  /** Resolves when `predicate` holds over the messages received so far. */
  waitFor(predicate: (c: WsClient) => boolean, timeoutMs = 5_000): Promise<void> {
    if (predicate(this)) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!predicate(this)) return
        clearTimeout(timer)
        this.listeners.delete(check)
        resolve()
      }
      const timer = setTimeout(() => {
        this.listeners.delete(check)
        reject(new Error(`timed out; got ${JSON.stringify(this.types)}`))
      }, timeoutMs)
      this.listeners.add(check)
    })
  }

  /** Resolves when a message of `type` (matching `where`) arrived. */
  waitForType(type: string, where: (m: WsMessage) => boolean = () => true, timeoutMs?: number): Promise<void> {
    return this.waitFor((c) => c.messages.some((m) => m.type === type && where(m)), timeoutMs)
  }

  /**
   * Resolves once the fake answers a ping sent now. The fake reads this socket's frames in order
   * and sends in order on one TCP stream, so whatever it sent before reading the ping has arrived
   * by then: how a test asserts that nothing more came, without sleeping. A silenced socket
   * answers no ping.
   */
  flush(timeoutMs = 5_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const answered = () => {
        clearTimeout(timer)
        resolve()
      }
      const timer = setTimeout(() => {
        this.ws.off("pong", answered)
        reject(new Error(`no pong within ${timeoutMs} ms; got ${JSON.stringify(this.types)}`))
      }, timeoutMs)
      this.ws.once("pong", answered)
      this.ws.ping()
    })
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.ws.readyState === WebSocket.CLOSED) return resolve()
      this.ws.once("close", () => resolve())
      this.ws.close()
    })
  }
}

/**
 * Waits until `condition` holds, checking every 10 ms on the fiber's clock (a live clock: under a
 * TestClock it never moves on); fails after `within`, saying what it waited for.
 */
export const waitUntil = (condition: () => boolean, what: string, within: Duration.Input = "5 seconds") =>
  Effect.suspend(() => condition() ? Effect.void : Effect.fail("not yet" as const)).pipe(
    Effect.retry(Schedule.spaced("10 millis")),
    Effect.timeoutOrElse({
      duration: within,
      orElse: () => Effect.fail(new Error(`timed out after ${Duration.format(Duration.fromInputUnsafe(within))} waiting for ${what}`))
    }),
    Effect.orDie
  )

/** A runner target pointing at `fake`. */
export const runnerFor = (fake: FakeComfyUI, headers: Record<string, string> = {}): RunnerTarget => ({
  kind: "user",
  id: "runner-1",
  name: "fake",
  endpoint: fake.url,
  headers,
  tags: [],
  status: "active"
})

/** Short timeouts so failure paths finish quickly in tests. */
export const testGatewayOptions: RunnerGatewayOptions = {
  requestTimeout: "2 seconds",
  uploadTimeout: "5 seconds",
  downloadIdleTimeout: "2 seconds",
  openTimeout: "2 seconds",
  heartbeatInterval: "200 millis",
  heartbeatTimeout: "300 millis",
  reconnectInitialDelay: "50 millis",
  reconnectMaxDelay: "300 millis",
  closeTimeout: "500 millis"
}

/** The gateway under test. */
export const gatewayLayer = (options: RunnerGatewayOptions = {}) => RunnerGatewayNode({ ...testGatewayOptions, ...options })

export const uuid = (): string => crypto.randomUUID()
