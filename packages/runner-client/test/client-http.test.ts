/** RunnerGateway's HTTP operations against the fake: results, headers, timeouts and error mapping. */
import * as http from "node:http"
import type * as net from "node:net"
import { describe, expect, it, layer } from "@effect/vitest"
import { type Download, isBlobBytes, RunnerGateway, StorageError } from "@wes/core"
import { inputReference } from "@wes/core/testing"
import {
  audioWorkflow,
  FakeComfyUI,
  loadImageWorkflow,
  saveImageWorkflow,
  solidPng,
  textWorkflow,
  videoWorkflow
} from "@wes/runner-client/testing"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { gatewayLayer, runnerFor, uuid } from "./harness.js"

const bytes = (b: Uint8Array) => Stream.make(b)

type Graph = Record<string, { readonly class_type: string; readonly inputs: Record<string, unknown> }>

/** `graph` with its node ids (and links) moved up by `by`, to join another graph. */
const renumber = (graph: Graph, by: number): Graph =>
  Object.fromEntries(Object.entries(graph).map(([id, node]) => [String(Number(id) + by), {
    ...node,
    inputs: Object.fromEntries(Object.entries(node.inputs).map(([k, v]) => [k, Array.isArray(v) ? [String(Number(v[0]) + by), v[1]] : v]))
  }]))
const wait = (p: () => Promise<void>) => Effect.promise(p)

/** The bytes of a download. */
const readAll = (content: Download["content"]) =>
  isBlobBytes(content)
    ? Effect.succeed(Buffer.concat(content))
    : Stream.runCollect(content).pipe(Effect.map((c) => Buffer.concat(c)))

/** A server that answers everything with 200 and a non-ComfyUI body. */
const notComfy = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<http.Server>((resolve) => {
      const server = http.createServer((_, res) => res.end("<html>hello</html>"))
      server.listen(0, "127.0.0.1", () => resolve(server))
    })
  ),
  (server) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

layer(gatewayLayer(), { excludeTestServices: true })("RunnerGateway HTTP", (it) => {
  it.effect("probes /system_stats for the ComfyUI version and devices, and asks whether the runner has the jobs API", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped({ version: "0.3.50" })
      const gateway = yield* RunnerGateway
      expect(yield* gateway.probe(runnerFor(fake))).toEqual({
        version: "0.3.50",
        devices: [{ name: "cpu", type: "cpu", index: null, vram_total: expect.any(Number) }],
        jobs_api: false
      })
      expect(fake.requests.map((r) => r.path).sort()).toEqual(["/api/jobs?status=in_progress&limit=1", "/system_stats"])
      const newer = yield* FakeComfyUI.scoped({ version: "0.38.1", jobsApi: true })
      expect(yield* gateway.probe(runnerFor(newer))).toMatchObject({ version: "0.38.1", jobs_api: true })
    }))

  it.effect("sends the runner's custom headers on every operation", () =>
    Effect.gen(function*() {
      const headers = { "X-Api-Key": "secret", Authorization: "Bearer t" }
      const fake = yield* FakeComfyUI.scoped({ requiredHeaders: { "x-api-key": "secret", authorization: "Bearer t" } })
      const gateway = yield* RunnerGateway
      const runner = runnerFor(fake, headers)
      yield* gateway.probe(runner)
      const uploaded = yield* gateway.uploadInput(runner, { filename: "in.png", content_type: "image/png", content: bytes(solidPng(2, 2, 1)) })
      const id = uuid()
      yield* gateway.submit(runner, { prompt_id: id, prompt: loadImageWorkflow({ image: inputReference(uploaded) }), client_id: "c", extra_data: {} })
      yield* gateway.queue(runner)
      yield* wait(() => fake.whenFinished(id))
      const history = Option.getOrThrow(yield* gateway.history(runner, id))
      const download = yield* gateway.download(runner, history.outputs[0]!)
      expect((yield* readAll(download.content)).length).toBeGreaterThan(0)
      yield* gateway.cancel(runner, id)
      expect(fake.requests.length).toBeGreaterThanOrEqual(8)
      for (const r of fake.requests) {
        expect(r.headers["x-api-key"], r.path).toBe("secret")
        expect(r.headers.authorization, r.path).toBe("Bearer t")
      }

      const refused = yield* Effect.flip(gateway.queue(runnerFor(fake)))
      expect(refused).toMatchObject({ _tag: "RunnerRequestFailed", status: 401, runner_id: "runner-1" })
      expect(refused.message).toContain("401")
    }))

  it.effect("uploads an input (streamed multipart) and returns where it landed", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const runner = runnerFor(fake)
      const png = solidPng(3, 3, 0x123456)
      const chunks = Stream.fromIterable([png.subarray(0, 10), png.subarray(10, 20), png.subarray(20)])
      const first = yield* gateway.uploadInput(runner, { filename: "photo.png", content_type: "image/png", content: chunks })
      expect(first).toEqual({ name: "photo.png", subfolder: "wes", type: "input" })
      expect(fake.uploads.at(-1)).toMatchObject({ name: "photo.png", subfolder: "wes", type: "input", size: png.length, overwrite: false })

      // Same content: same name. Different content: ComfyUI's rename.
      const same = yield* gateway.uploadInput(runner, { filename: "photo.png", content_type: "image/png", content: bytes(png) })
      expect(same.name).toBe("photo.png")
      const other = yield* gateway.uploadInput(runner, { filename: "photo.png", content_type: "image/png", content: bytes(solidPng(3, 3, 1)) })
      expect(other).toEqual({ name: "photo (1).png", subfolder: "wes", type: "input" })

      // A name cannot pick a directory on the runner.
      const sneaky = yield* gateway.uploadInput(runner, { filename: "../../evil.png", content_type: "image/png", content: bytes(png) })
      expect(sneaky).toEqual({ name: "evil.png", subfolder: "wes", type: "input" })
      expect(yield* Effect.promise(() => fake.files.list("input"))).toEqual(["wes/evil.png", "wes/photo (1).png", "wes/photo.png"])
    }))

  it.effect("fails an upload with the StorageError of its content stream", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const broken = Stream.make(new Uint8Array([1, 2, 3])).pipe(
        Stream.concat(Stream.fail(new StorageError({ message: "blob vanished" })))
      )
      const error = yield* Effect.flip(gateway.uploadInput(runnerFor(fake), { filename: "x.png", content_type: "image/png", content: broken }))
      expect(error).toEqual(new StorageError({ message: "blob vanished" }))
    }))

  it.effect("submits with the given prompt_id, client_id and extra_data.wes_workflow_id", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      fake.pauseQueue()
      const gateway = yield* RunnerGateway
      const id = uuid()
      const submitted = yield* gateway.submit(runnerFor(fake), {
        prompt_id: id,
        prompt: saveImageWorkflow(),
        client_id: "wes-client",
        extra_data: { extra_pnginfo: { note: 1 } }
      })
      expect(submitted).toEqual({ prompt_id: id, number: 0 })
      const s = fake.submissions.at(-1)!
      expect([s.prompt_id, s.client_id, s.status]).toEqual([id, "wes-client", 200])
      expect(s.body).toMatchObject({ prompt_id: id, client_id: "wes-client", extra_data: { wes_workflow_id: id, extra_pnginfo: { note: 1 } } })
      expect(fake.state.pending).toEqual([id])
    }))

  it.effect("maps a 400 to PromptRejected with the runner's reasons and the failing node", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const runner = runnerFor(fake)
      const w = saveImageWorkflow()
      w["1"]!.inputs.width = 0
      const invalid = yield* Effect.flip(gateway.submit(runner, { prompt_id: uuid(), prompt: w, client_id: "c", extra_data: {} }))
      expect(invalid).toMatchObject({
        _tag: "PromptRejected",
        runner_id: "runner-1",
        error_type: "prompt_outputs_failed_validation",
        error_node: "1",
        message: "Prompt outputs failed validation: node 1 (EmptyImage): Value 0 smaller than min of 1: width"
      })

      const unknown = yield* Effect.flip(gateway.submit(runner, {
        prompt_id: uuid(),
        prompt: { ...saveImageWorkflow(), "7": { class_type: "NoSuchNode", inputs: {} } },
        client_id: "c",
        extra_data: {}
      }))
      expect(unknown).toMatchObject({
        _tag: "PromptRejected",
        error_type: "invalid_prompt",
        error_node: "7",
        message: "Cannot execute because node NoSuchNode does not exist.: Node ID '#7'"
      })

      const badId = yield* Effect.flip(gateway.submit(runner, { prompt_id: "WF-1", prompt: saveImageWorkflow(), client_id: "c", extra_data: {} }))
      expect(badId).toMatchObject({ _tag: "PromptRejected", error_type: "invalid_prompt_id", error_node: null })
      expect(badId.message).toContain("prompt_id must be a valid UUID")
    }))

  it.effect("refuses a runner that ignores the prompt id (ComfyUI before 0.3.45) and withdraws what it queued", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped({ promptIdMode: "ignored" })
      fake.pauseQueue()
      const gateway = yield* RunnerGateway
      const id = uuid()
      const error = yield* Effect.flip(gateway.submit(runnerFor(fake), { prompt_id: id, prompt: saveImageWorkflow(), client_id: "c", extra_data: {} }))
      expect(error).toMatchObject({ _tag: "PromptRejected", error_type: "unsupported_runner", error_node: null })
      expect(error.message).toContain("ComfyUI 0.3.45 or later")
      expect(fake.submissions.at(-1)!.prompt_id).not.toBe(id)
      expect(fake.state.pending).toEqual([])
    }))

  it.effect("treats a 200 with node_errors as PromptRejected and withdraws the queued prompt", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      fake.pauseQueue()
      const gateway = yield* RunnerGateway
      const id = uuid()
      const error = yield* Effect.flip(gateway.submit(runnerFor(fake), {
        prompt_id: id,
        prompt: {
          "1": { class_type: "EmptyImage", inputs: { width: 8, height: 8, batch_size: 1, color: 0 } },
          "2": { class_type: "SaveImage", inputs: { images: ["1", 0], filename_prefix: "good" } },
          "3": { class_type: "SaveImage", inputs: { filename_prefix: "bad" } }
        },
        client_id: "c",
        extra_data: {}
      }))
      expect(error).toMatchObject({
        _tag: "PromptRejected",
        error_type: "prompt_outputs_failed_validation",
        error_node: "3",
        message: "Some outputs failed validation: node 3 (SaveImage): Required input is missing: images"
      })
      expect(fake.submissions.at(-1)!.status).toBe(200)
      expect(fake.state.pending).toEqual([])
      // Deleted from the queue; not running, so no interrupt.
      expect(fake.requests.slice(-2).map((r) => `${r.method} ${r.path}`)).toEqual(["POST /queue", "GET /queue"])
    }))

  it.effect("cancels a pending prompt without interrupting the running one, even where /interrupt is global (before 0.3.57)", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped({ globalInterrupt: true })
      fake.hold()
      const gateway = yield* RunnerGateway
      const runner = runnerFor(fake)
      const running = uuid()
      const pending = uuid()
      yield* gateway.submit(runner, { prompt_id: running, prompt: saveImageWorkflow({ prefix: "run" }), client_id: "c", extra_data: {} })
      yield* wait(() => fake.whenRunning(running))
      yield* gateway.submit(runner, { prompt_id: pending, prompt: saveImageWorkflow({ prefix: "pend" }), client_id: "c", extra_data: {} })
      yield* gateway.cancel(runner, pending)
      expect(fake.state.pending).toEqual([])
      expect(fake.state.running).toBe(running)
      expect(fake.requests.some((r) => r.path === "/interrupt")).toBe(false)
      yield* gateway.cancel(runner, running)
      yield* wait(() => fake.whenFinished(running))
      const history = Option.getOrThrow(yield* gateway.history(runner, running))
      expect(history.outcome).toBe("interrupted")
    }))

  it.effect("reads the queue: running ids and pending ids in execution order", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      fake.hold()
      const gateway = yield* RunnerGateway
      const runner = runnerFor(fake)
      const submit = (extra: Record<string, unknown>, prefix: string) =>
        Effect.promise(async () => {
          const id = uuid()
          await fetch(`${fake.url}/prompt`, { method: "POST", body: JSON.stringify({ prompt: saveImageWorkflow({ prefix }), prompt_id: id, ...extra }) })
          return id
        })
      const running = yield* submit({}, "r")
      yield* wait(() => fake.whenRunning(running))
      const a = yield* submit({}, "a")
      const b = yield* submit({ front: true }, "b")
      const c = yield* submit({ number: 1.5 }, "c")
      expect(yield* gateway.queue(runner)).toEqual({ running: [running], pending: [b, a, c] })
      fake.release()
    }))

  it.effect("reads history: none until finished, then outcome, output files and timestamps", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      fake.hold()
      const gateway = yield* RunnerGateway
      const runner = runnerFor(fake)
      const id = uuid()
      yield* gateway.submit(runner, {
        prompt_id: id,
        prompt: { ...saveImageWorkflow({ prefix: "h/run", batch: 2 }), "4": { class_type: "PreviewImage", inputs: { images: ["2", 0] } } },
        client_id: "c",
        extra_data: {}
      })
      yield* wait(() => fake.whenRunning(id))
      expect(yield* gateway.history(runner, id)).toEqual(Option.none())
      expect(yield* gateway.history(runner, uuid())).toEqual(Option.none())
      fake.release()
      yield* wait(() => fake.whenFinished(id))

      const h = Option.getOrThrow(yield* gateway.history(runner, id))
      expect(h.outcome).toBe("success")
      expect(h.error).toBeNull()
      expect(h.outputs).toEqual([
        { node_id: "3", filename: "run_00001_.png", subfolder: "h", type: "output" },
        { node_id: "3", filename: "run_00002_.png", subfolder: "h", type: "output" },
        { node_id: "4", filename: expect.stringMatching(/^ComfyUI_temp_[a-z]{5}_00001_\.png$/), subfolder: "", type: "temp" },
        { node_id: "4", filename: expect.stringMatching(/^ComfyUI_temp_[a-z]{5}_00002_\.png$/), subfolder: "", type: "temp" }
      ])
      expect(h.started_at).toEqual(expect.any(Number))
      expect(h.completed_at).toBeGreaterThanOrEqual(h.started_at!)

      const text = uuid()
      yield* gateway.submit(runner, { prompt_id: text, prompt: textWorkflow("only text"), client_id: "c", extra_data: {} })
      yield* wait(() => fake.whenFinished(text))
      expect(Option.getOrThrow(yield* gateway.history(runner, text))).toMatchObject({ outcome: "success", outputs: [] })
    }))

  it.effect("lists video and audio outputs and downloads them with their content type, even from a runner whose mime table lacks them", () =>
    Effect.gen(function*() {
      // A slim container's Python answers application/octet-stream for .flac.
      const fake = yield* FakeComfyUI.scoped({ mimeTypes: "builtin" })
      const gateway = yield* RunnerGateway
      const runner = runnerFor(fake)
      const id = uuid()
      const prompt = { ...videoWorkflow({ prefix: "media/clip" }), ...renumber(audioWorkflow({ prefix: "media/voice" }), 10) }
      yield* gateway.submit(runner, { prompt_id: id, prompt, client_id: "c", extra_data: {} })
      yield* wait(() => fake.whenFinished(id))
      const h = Option.getOrThrow(yield* gateway.history(runner, id))
      expect(h.outputs).toEqual([
        { node_id: "3", filename: "clip_00001_.mp4", subfolder: "media", type: "output" },
        { node_id: "12", filename: "voice_00001_.flac", subfolder: "media", type: "output" }
      ])
      const [video, audio] = yield* Effect.forEach(h.outputs, (file) => gateway.download(runner, file))
      expect([video!.content_type, audio!.content_type]).toEqual(["video/mp4", "audio/flac"])
      expect((yield* readAll(video!.content)).subarray(4, 8).toString("latin1")).toBe("ftyp")
      expect((yield* readAll(audio!.content)).subarray(0, 4).toString("latin1")).toBe("fLaC")
    }))

  it.effect("reads a failed prompt's error and an interrupted prompt's outcome", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const runner = runnerFor(fake)
      fake.failNode({ nodeId: "2", exceptionType: "torch.OutOfMemoryError", exceptionMessage: "CUDA out of memory" })
      const failed = uuid()
      yield* gateway.submit(runner, { prompt_id: failed, prompt: saveImageWorkflow(), client_id: "c", extra_data: {} })
      yield* wait(() => fake.whenFinished(failed))
      expect(Option.getOrThrow(yield* gateway.history(runner, failed))).toMatchObject({
        outcome: "error",
        outputs: [],
        error: { node_id: "2", exception_type: "torch.OutOfMemoryError", exception_message: "CUDA out of memory" }
      })
      fake.clearFailures()

      fake.hold()
      const interrupted = uuid()
      yield* gateway.submit(runner, { prompt_id: interrupted, prompt: saveImageWorkflow({ prefix: "i" }), client_id: "c", extra_data: {} })
      yield* wait(() => fake.whenRunning(interrupted))
      yield* gateway.cancel(runner, interrupted)
      yield* wait(() => fake.whenFinished(interrupted))
      expect(Option.getOrThrow(yield* gateway.history(runner, interrupted))).toMatchObject({ outcome: "interrupted", error: null })
    }))

  it.effect("cancels a pending prompt by deleting it from the queue", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      fake.hold()
      const gateway = yield* RunnerGateway
      const runner = runnerFor(fake)
      const first = uuid()
      const second = uuid()
      yield* gateway.submit(runner, { prompt_id: first, prompt: saveImageWorkflow({ prefix: "1" }), client_id: "c", extra_data: {} })
      yield* gateway.submit(runner, { prompt_id: second, prompt: saveImageWorkflow({ prefix: "2" }), client_id: "c", extra_data: {} })
      yield* wait(() => fake.whenRunning(first))
      yield* gateway.cancel(runner, second)
      expect(yield* gateway.queue(runner)).toEqual({ running: [first], pending: [] })
      fake.release()
      yield* wait(() => fake.whenFinished(first))
      expect(yield* gateway.history(runner, second)).toEqual(Option.none())
      expect(Option.getOrThrow(yield* gateway.history(runner, first)).outcome).toBe("success")
    }))

  it.effect("downloads an output with its content type; a missing file is RunnerRequestFailed 404", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const runner = runnerFor(fake)
      const id = uuid()
      yield* gateway.submit(runner, { prompt_id: id, prompt: saveImageWorkflow({ prefix: "dl/out" }), client_id: "c", extra_data: {} })
      yield* wait(() => fake.whenFinished(id))
      const file = Option.getOrThrow(yield* gateway.history(runner, id)).outputs[0]!
      const download = yield* gateway.download(runner, file)
      expect(download.content_type).toBe("image/png")
      const onDisk = yield* Effect.promise(() => import("node:fs/promises").then((fs) => fs.readFile(`${fake.files.dir("output")}/dl/out_00001_.png`)))
      // A file under the limit (256 KiB by default) arrives read whole.
      expect(isBlobBytes(download.content)).toBe(true)
      expect(yield* readAll(download.content)).toEqual(onDisk)
      // One above it streams, with the same bytes.
      const streamed = yield* Effect.provide(
        Effect.flatMap(RunnerGateway, (small) => small.download(runner, file)),
        gatewayLayer({ downloadHeldWhole: onDisk.length - 1 })
      )
      expect(isBlobBytes(streamed.content)).toBe(false)
      expect(yield* readAll(streamed.content)).toEqual(onDisk)

      const missing = yield* Effect.flip(gateway.download(runner, { ...file, filename: "nope.png" }))
      expect(missing).toMatchObject({ _tag: "RunnerRequestFailed", status: 404 })
    }))
})

layer(gatewayLayer(), { excludeTestServices: true })("RunnerGateway HTTP failures", (it) => {
  it.effect("maps 5xx to RunnerUnreachable quoting status and body, other 4xx to RunnerRequestFailed", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const runner = runnerFor(fake)
      fake.failHttp(500)
      for (const op of [gateway.probe(runner), gateway.queue(runner), gateway.history(runner, uuid()), gateway.cancel(runner, uuid())]) {
        const e = yield* Effect.flip(op)
        expect(e._tag).toBe("RunnerUnreachable")
        expect(e.message).toContain("HTTP 500")
        expect(e.message).toContain("Server got itself in trouble")
      }
      const submit = yield* Effect.flip(gateway.submit(runner, { prompt_id: uuid(), prompt: saveImageWorkflow(), client_id: "c", extra_data: {} }))
      expect(submit).toMatchObject({ _tag: "RunnerUnreachable", runner_id: "runner-1" })
      const upload = yield* Effect.flip(gateway.uploadInput(runner, { filename: "a.png", content_type: "image/png", content: bytes(solidPng(1, 1, 0)) }))
      expect(upload._tag).toBe("RunnerUnreachable")

      fake.failHttp(418)
      expect(yield* Effect.flip(gateway.probe(runner))).toMatchObject({ _tag: "RunnerRequestFailed", status: 418 })
      fake.restoreHttp()
      expect(yield* gateway.probe(runner)).toMatchObject({ version: expect.any(String) })
    }))

  it.effect("maps refused and reset connections to RunnerUnreachable", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const runner = runnerFor(fake)
      yield* Effect.promise(() => fake.refuseConnections("close"))
      const refused = yield* Effect.flip(gateway.probe(runner))
      expect(refused._tag).toBe("RunnerUnreachable")
      expect(refused.message).toMatch(/^GET \/system_stats: .*ECONNREFUSED/)
      yield* Effect.promise(() => fake.acceptConnections())
      yield* Effect.promise(() => fake.refuseConnections("reset"))
      expect((yield* Effect.flip(gateway.queue(runner)))._tag).toBe("RunnerUnreachable")
      yield* Effect.promise(() => fake.acceptConnections())
      expect(yield* gateway.queue(runner)).toEqual({ running: [], pending: [] })
    }))

  it.effect("times out slow runners with RunnerUnreachable", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      fake.slowHttp(2_000)
      const gateway = yield* RunnerGateway
      const e = yield* Effect.flip(gateway.queue(runnerFor(fake)))
      expect(e).toMatchObject({ _tag: "RunnerUnreachable", message: "GET /queue: no answer within 300ms" })
      fake.restoreHttp()
    }).pipe(Effect.provide(gatewayLayer({ requestTimeout: "300 millis" }))))

  it.effect("fails with RunnerUnreachable when the endpoint is not ComfyUI", () =>
    Effect.gen(function*() {
      const server = yield* notComfy
      const port = (server.address() as net.AddressInfo).port
      const gateway = yield* RunnerGateway
      const runner = { ...runnerFor({ url: `http://127.0.0.1:${port}` } as FakeComfyUI) }
      const e = yield* Effect.flip(gateway.probe(runner))
      expect(e).toMatchObject({
        _tag: "RunnerUnreachable",
        message: "GET /system_stats: runner answered HTTP 200 with an unexpected body: <html>hello</html>"
      })
      expect((yield* Effect.flip(gateway.history(runner, uuid())))._tag).toBe("RunnerUnreachable")
    }))
})

describe("RunnerGateway layers", () => {
  it.live("RunnerGatewayNode runs a whole prompt round trip", () =>
    Effect.gen(function*() {
      const { RunnerGatewayNode } = yield* Effect.promise(() => import("@wes/runner-client"))
      const fake = yield* FakeComfyUI.scoped()
      const run = Effect.gen(function*() {
        const gateway = yield* RunnerGateway
        const runner = runnerFor(fake)
        const id = uuid()
        yield* gateway.submit(runner, { prompt_id: id, prompt: saveImageWorkflow(), client_id: "c", extra_data: {} })
        yield* wait(() => fake.whenFinished(id))
        return Option.getOrThrow(yield* gateway.history(runner, id)).outcome
      })
      expect(yield* run.pipe(Effect.provide(RunnerGatewayNode()))).toBe("success")
    }))
})
