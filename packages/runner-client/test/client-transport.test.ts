/**
 * The gateway's HTTP transport (undici): connections reused and closed with the layer, a call's
 * interruption aborting its request, the one timeout of each kind of call, and endpoints under
 * a path prefix such as `/api`.
 */
import * as http from "node:http"
import type * as net from "node:net"
import { describe, expect, it } from "@effect/vitest"
import { isBlobBytes, RunnerGateway, type RunnerTarget } from "@wes/core"
import { FakeComfyUI, solidPng } from "@wes/runner-client/testing"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import { gatewayLayer, runnerFor, uuid, waitUntil } from "./harness.js"

interface RawServer {
  readonly server: http.Server
  readonly runner: RunnerTarget
  readonly stats: { connections: number; open: number; requests: number }
}

/** A plain HTTP server that counts connections and requests; `answer` decides what each request gets. */
const rawServer = (answer: http.RequestListener) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<RawServer>((resolve) => {
        const stats = { connections: 0, open: 0, requests: 0 }
        // Keeps idle connections a minute, so only the client can be the one closing them sooner.
        const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
          stats.requests++
          answer(req, res)
        })
        server.on("connection", (socket: net.Socket) => {
          stats.connections++
          stats.open++
          socket.on("close", () => stats.open--)
        })
        server.listen(0, "127.0.0.1", () => {
          const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`
          resolve({ server, runner: runnerFor({ url } as FakeComfyUI), stats })
        })
      })
    ),
    ({ server }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          server.closeAllConnections()
          server.close(() => resolve())
        })
      )
  )

/** An output file to download. */
const anOutput = { node_id: "1", filename: "a.png", subfolder: "", type: "output" }

/** A runner whose downloads announce 100 bytes and send 16, then nothing more (or, `cut`, close). */
const shortDownload = (cut = false) =>
  rawServer((_, res) => {
    res.writeHead(200, { "content-type": "image/png", "content-length": "100" })
    res.write(solidPng(2, 2, 0).subarray(0, 16), () => {
      if (cut) res.destroy()
    })
  })

const queueJson = JSON.stringify({ queue_running: [], queue_pending: [] })
const answerQueue: http.RequestListener = (_, res) => {
  res.writeHead(200, { "content-type": "application/json" })
  res.end(queueJson)
}

describe("RunnerGateway transport", () => {
  it.live("keeps connections alive across calls and closes them when the layer is released", () =>
    Effect.gen(function*() {
      const { runner, stats } = yield* rawServer(answerQueue)
      yield* Effect.gen(function*() {
        const gateway = yield* RunnerGateway
        for (let i = 0; i < 10; i++) expect(yield* gateway.queue(runner)).toEqual({ running: [], pending: [] })
        // undici may open a second connection when a call starts just before the previous one is
        // marked done; never one per call.
        expect(stats.requests).toBe(10)
        expect(stats.connections).toBeLessThanOrEqual(2)
        expect(stats.open).toBe(stats.connections)
      }).pipe(Effect.provide(gatewayLayer()))
      yield* waitUntil(() => stats.open === 0, "every connection to close")
    }))

  it.live("aborts the request of an interrupted call", () =>
    Effect.gen(function*() {
      const { runner, stats } = yield* rawServer(() => {
        // Never answers.
      })
      const gateway = yield* RunnerGateway
      const call = yield* Effect.forkChild(gateway.queue(runner))
      yield* waitUntil(() => stats.requests === 1, "the request to arrive")
      yield* Fiber.interrupt(call)
      yield* waitUntil(() => stats.open === 0, "every connection to close")
    }).pipe(Effect.provide(gatewayLayer({ requestTimeout: "1 minute" }))))

  it.live("asks a post's fence once its connection is open, right before writing: withheld, the runner receives nothing", () =>
    Effect.gen(function*() {
      const bodies: Array<string> = []
      const { runner, stats } = yield* rawServer((req, res) => {
        let body = ""
        req.on("data", (chunk: Buffer) => (body += chunk.toString()))
        req.on("end", () => {
          bodies.push(body)
          const { prompt_id } = JSON.parse(body) as { prompt_id: string }
          res.writeHead(200, { "content-type": "application/json" })
          res.end(JSON.stringify({ prompt_id, number: 1, node_errors: {} }))
        })
      })
      const gateway = yield* RunnerGateway
      const asked: Array<number> = []
      const id = uuid()
      const prompt = { prompt_id: id, prompt: { "1": { class_type: "EmptyImage", inputs: {} } }, client_id: "c", extra_data: {} }
      const withheld = yield* Effect.flip(gateway.submit(runner, { ...prompt, fence: () => (asked.push(stats.connections), false) }))
      expect(withheld._tag).toBe("PromptWithheld")
      expect(withheld.message).toContain("not sent")
      // Asked once, with the connection already open: nothing waits between the answer and the write.
      expect(asked).toEqual([1])
      expect(stats.requests).toBe(0)

      const posted = yield* gateway.submit(runner, { ...prompt, fence: () => (asked.push(stats.connections), true) })
      expect(posted).toEqual({ prompt_id: id, number: 1 })
      expect(asked).toHaveLength(2)
      expect(stats.requests).toBe(1)
      expect(JSON.parse(bodies[0]!)).toMatchObject({ prompt_id: id, client_id: "c" })
    }).pipe(Effect.provide(gatewayLayer())))

  it.live("aborts a small download being read whole when its call is interrupted", () =>
    Effect.gen(function*() {
      const { runner, stats } = yield* shortDownload()
      const gateway = yield* RunnerGateway
      const call = yield* Effect.forkChild(gateway.download(runner, anOutput))
      yield* waitUntil(() => stats.requests === 1, "the request to arrive")
      yield* Fiber.interrupt(call)
      yield* waitUntil(() => stats.open === 0, "every connection to close")
    }).pipe(Effect.provide(gatewayLayer({ requestTimeout: "1 minute", downloadIdleTimeout: "1 minute" }))))

  it.live("reports an answer whose body breaks off", () =>
    Effect.gen(function*() {
      const { runner } = yield* rawServer((_, res) => {
        res.writeHead(200, { "content-type": "application/json", "content-length": "100" })
        res.write(queueJson.slice(0, 10), () => res.destroy())
      })
      const gateway = yield* RunnerGateway
      const e = yield* Effect.flip(gateway.queue(runner))
      expect(e._tag).toBe("RunnerUnreachable")
      expect(e.message).toMatch(/^GET \/queue: reading the answer failed: /)
    }).pipe(Effect.provide(gatewayLayer())))

  it.live("fails a download whose bytes stop coming with the idle timeout", () =>
    Effect.gen(function*() {
      const { runner } = yield* rawServer((_, res) => {
        res.writeHead(200, { "content-type": "image/png" })
        res.write(solidPng(2, 2, 0).subarray(0, 16))
      })
      const gateway = yield* RunnerGateway
      const download = yield* gateway.download(runner, anOutput)
      expect(download.content_type).toBe("image/png")
      if (isBlobBytes(download.content)) return yield* Effect.die(new Error("a download of unannounced length was read whole"))
      const e = yield* Effect.flip(Stream.runDrain(download.content))
      expect(e).toMatchObject({ _tag: "RunnerUnreachable", message: "GET /view: download stalled for 300ms" })
    }).pipe(Effect.provide(gatewayLayer({ downloadIdleTimeout: "300 millis" }))))

  it.live("fails a small download read whole whose bytes stop coming the same way", () =>
    Effect.gen(function*() {
      const { runner } = yield* shortDownload()
      const gateway = yield* RunnerGateway
      const e = yield* Effect.flip(gateway.download(runner, anOutput))
      expect(e).toMatchObject({ _tag: "RunnerUnreachable", message: "GET /view: download stalled for 300ms" })
    }).pipe(Effect.provide(gatewayLayer({ downloadIdleTimeout: "300 millis" }))))

  it.live("a small download cut short fails as broken off, not as a file", () =>
    Effect.gen(function*() {
      const { runner } = yield* shortDownload(true)
      const gateway = yield* RunnerGateway
      const e = yield* Effect.flip(gateway.download(runner, anOutput))
      expect(e._tag).toBe("RunnerUnreachable")
      expect(e.message).toMatch(/^GET \/view: download broke off: /)
    }).pipe(Effect.provide(gatewayLayer())))

  it.live("bounds a whole upload by uploadTimeout, and only by it", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const png = solidPng(3, 3, 7)
      // Slower between chunks than requestTimeout, well within uploadTimeout: it lands.
      const slow = Stream.fromIterable([png.subarray(0, 10), png.subarray(10, 20), png.subarray(20)]).pipe(
        Stream.schedule(Schedule.spaced("300 millis"))
      )
      const landed = yield* gateway.uploadInput(runnerFor(fake), { filename: "slow.png", content_type: "image/png", content: slow })
      expect(landed).toEqual({ name: "slow.png", subfolder: "wes", type: "input" })
      expect(fake.uploads.at(-1)).toMatchObject({ name: "slow.png", size: png.length })

      // A body that never ends: the whole exchange is cut at uploadTimeout.
      const { runner } = yield* rawServer((req) => req.resume())
      const endless = Stream.make(png).pipe(Stream.concat(Stream.never))
      const e = yield* Effect.flip(gateway.uploadInput(runner, { filename: "x.png", content_type: "image/png", content: endless }))
      expect(e).toMatchObject({ _tag: "RunnerUnreachable", message: "POST /upload/image: no answer within 3s" })
    }).pipe(Effect.provide(gatewayLayer({ requestTimeout: "200 millis", uploadTimeout: "3 seconds" }))))

  it.live("talks to an endpoint under a path prefix (ComfyUI's /api routes)", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const runner = { ...runnerFor(fake), endpoint: `${fake.url}/api/` }
      yield* gateway.probe(runner)
      yield* gateway.queue(runner)
      yield* gateway.history(runner, uuid())
      // The jobs API's routes exist only under /api: below this endpoint, /api/api/jobs (ComfyUI aliases every route).
      expect(fake.requests.map((r) => `${r.method} ${r.path}`).sort()).toEqual([
        "GET /api/api/jobs?status=in_progress&limit=1",
        expect.stringMatching(/^GET \/api\/history\//),
        "GET /api/queue",
        "GET /api/system_stats"
      ])
    }).pipe(Effect.provide(gatewayLayer())))
})
