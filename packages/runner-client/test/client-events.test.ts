/** RunnerGateway.events against the fake: decoding, order, reconnects, heartbeat, headers, buffering. */
import { expect, layer } from "@effect/vitest"
import { type RunnerEvent, RunnerGateway, type RunnerTarget } from "@wes/core"
import { runnerEvents } from "@wes/runner-client"
import { FakeComfyUI, inspectImage, saveImageWorkflow, slowWorkflow, solidPng, websocketImageWorkflow } from "@wes/runner-client/testing"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import type * as Scope from "effect/Scope"
import { gatewayLayer, runnerFor, testGatewayOptions, uuid, waitUntil } from "./harness.js"

type Tag = RunnerEvent["_tag"]

/** Takes a runner's events as they come; `until` waits for a matching event, recording all seen. */
const watch = (events: Effect.Effect<Queue.Dequeue<RunnerEvent>, never, Scope.Scope>): Effect.Effect<{
  readonly seen: Array<RunnerEvent>
  readonly until: (pred: (e: RunnerEvent) => boolean, timeout?: Duration.Input) => Effect.Effect<RunnerEvent>
}, never, Scope.Scope> =>
  Effect.gen(function*() {
    const q = yield* events
    const seen: Array<RunnerEvent> = []
    const until = (pred: (e: RunnerEvent) => boolean, timeout: Duration.Input = "5 seconds") =>
      Effect.gen(function*() {
        while (true) {
          const e = yield* Queue.take(q)
          seen.push(e)
          if (pred(e)) return e
        }
      }).pipe(
        Effect.timeoutOrElse({ duration: timeout, orElse: () => Effect.fail(new Error(`no matching event; saw ${JSON.stringify(seen.map((e) => e._tag))}`)) }),
        Effect.orDie
      )
    return { seen, until }
  })

/** A `ProgressState` event of nodes without steps (value 0 of 1 while running, 1 of 1 when finished). */
const states = (promptId: string, nodes: Record<string, "running" | "finished">): RunnerEvent => ({
  _tag: "ProgressState",
  prompt_id: promptId,
  nodes: Object.entries(nodes).map(([node, state]) => ({ node, state, value: state === "finished" ? 1 : 0, max: 1 }))
})

const is = (tag: Tag) => (e: RunnerEvent) => e._tag === tag
const doneOf = (id: string) => (e: RunnerEvent) => e._tag === "PromptDone" && e.prompt_id === id
const post = (fake: FakeComfyUI, body: unknown) =>
  Effect.promise(() => fetch(`${fake.url}/prompt`, { method: "POST", body: JSON.stringify(body) }).then((r) => r.status))
const wait = (p: () => Promise<void>) => Effect.promise(p)

layer(gatewayLayer(), { excludeTestServices: true })("RunnerGateway events", (it) => {
  it.effect("emits Connected, then a prompt's events in order, ending with PromptDone", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const events = yield* watch(gateway.events(runnerFor(fake), "wes-1"))
      yield* events.until(is("QueueChanged"))
      const id = uuid()
      yield* post(fake, { prompt: saveImageWorkflow(), prompt_id: id, client_id: "wes-1" })
      yield* events.until(doneOf(id))
      expect(events.seen).toEqual([
        { _tag: "Connected" },
        { _tag: "QueueChanged", queue_remaining: 0 },
        { _tag: "QueueChanged", queue_remaining: 1 },
        { _tag: "QueueChanged", queue_remaining: 1 },
        { _tag: "ExecutionStart", prompt_id: id, timestamp: expect.any(Number) },
        { _tag: "ExecutionCached", prompt_id: id, nodes: [] },
        states(id, { "1": "running" }),
        { _tag: "Executing", prompt_id: id, node: "1" },
        states(id, { "1": "finished" }),
        states(id, { "1": "finished", "2": "running" }),
        { _tag: "Executing", prompt_id: id, node: "2" },
        states(id, { "1": "finished", "2": "finished" }),
        states(id, { "1": "finished", "2": "finished", "3": "running" }),
        { _tag: "Executing", prompt_id: id, node: "3" },
        {
          _tag: "Executed",
          prompt_id: id,
          node: "3",
          output: { images: [{ filename: "run_00001_.png", subfolder: "wes", type: "output" }] },
          files: [{ node_id: "3", filename: "run_00001_.png", subfolder: "wes", type: "output" }]
        },
        states(id, { "1": "finished", "2": "finished", "3": "finished" }),
        { _tag: "ExecutionSuccess", prompt_id: id, timestamp: expect.any(Number) },
        { _tag: "QueueChanged", queue_remaining: 0 },
        { _tag: "PromptDone", prompt_id: id }
      ])
    }))

  it.effect("decodes progress, execution_error and execution_interrupted", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const events = yield* watch(gateway.events(runnerFor(fake), "wes-2"))
      yield* events.until(is("Connected"))

      const slow = uuid()
      yield* post(fake, { prompt: slowWorkflow({ seconds: 0.03, steps: 3 }), prompt_id: slow, client_id: "wes-2" })
      yield* events.until(doneOf(slow))
      expect(events.seen.filter(is("Progress"))).toEqual([1, 2, 3].map((value) => ({ _tag: "Progress", prompt_id: slow, node: "2", value, max: 3 })))

      fake.failNode({ classType: "ImageInvert", exceptionType: "ValueError", exceptionMessage: "bad pixels", once: true })
      const failed = uuid()
      yield* post(fake, { prompt: saveImageWorkflow({ prefix: "f" }), prompt_id: failed, client_id: "wes-2" })
      expect(yield* events.until(is("ExecutionError"))).toEqual({
        _tag: "ExecutionError",
        prompt_id: failed,
        node_id: "2",
        node_type: "ImageInvert",
        exception_type: "ValueError",
        exception_message: "bad pixels",
        timestamp: expect.any(Number)
      })
      yield* events.until(doneOf(failed))

      fake.hold()
      const stopped = uuid()
      yield* post(fake, { prompt: saveImageWorkflow({ prefix: "s" }), prompt_id: stopped, client_id: "wes-2" })
      yield* wait(() => fake.whenRunning(stopped))
      yield* gateway.cancel(runnerFor(fake), stopped)
      expect(yield* events.until(is("ExecutionInterrupted"))).toEqual({
        _tag: "ExecutionInterrupted",
        prompt_id: stopped,
        timestamp: expect.any(Number)
      })
      yield* events.until(doneOf(stopped))
    }))

  it.effect("announces supports_preview_metadata, so previews arrive as type 4 frames naming prompt and node", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped({ previews: true })
      const gateway = yield* RunnerGateway
      const events = yield* watch(gateway.events(runnerFor(fake), "wes-p"))
      yield* events.until(is("Connected"))
      const id = uuid()
      yield* post(fake, { prompt: slowWorkflow({ seconds: 0.02, steps: 2 }), prompt_id: id, client_id: "wes-p" })
      yield* events.until(doneOf(id))
      const previews = events.seen.filter(is("ImageFrame"))
      expect(previews).toHaveLength(2)
      for (const p of previews) expect(p).toMatchObject({ _tag: "ImageFrame", prompt_id: id, node: "2", image_type: "image/png" })
    }))

  it.effect("gives a SaveImageWebsocket image, full size, as an ImageFrame with its bytes, naming its prompt and node", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const events = yield* watch(gateway.events(runnerFor(fake), "wes-w"))
      yield* events.until(is("Connected"))
      const id = uuid()
      yield* post(fake, { prompt: websocketImageWorkflow({ width: 96, height: 80, batch: 2, color: 0x336699 }), prompt_id: id, client_id: "wes-w" })
      yield* events.until(doneOf(id))
      const frames = events.seen.filter((e): e is Extract<RunnerEvent, { _tag: "ImageFrame" }> => e._tag === "ImageFrame")
      expect(frames.map((f) => [f.prompt_id, f.node, f.image_type])).toEqual([[id, "2", "image/png"], [id, "2", "image/png"]])
      for (const f of frames) expect(inspectImage(Buffer.from(f.image))).toEqual({ format: "PNG", width: 96, height: 80, color: 0x336699 })
    }))

  it.effect("attributes a type 1 image frame (no metadata) to the node executing when it came", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const events = yield* watch(gateway.events(runnerFor(fake), "wes-t"))
      yield* events.until(is("Connected"))
      fake.hold()
      const id = uuid()
      yield* post(fake, { prompt: saveImageWorkflow(), prompt_id: id, client_id: "wes-t" })
      yield* events.until((e) => e._tag === "Executing" && e.node === "1")
      // What a custom node that sends its image itself (UNENCODED_PREVIEW_IMAGE) puts on the wire: type 1, PNG.
      const png = solidPng(4, 4, 0xff0000)
      fake.sendRaw(Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 0, 0, 2]), png]), "wes-t")
      expect(yield* events.until(is("ImageFrame"))).toEqual({ _tag: "ImageFrame", prompt_id: id, node: "1", image_type: "image/png", image: png })
      fake.release()
      yield* events.until(doneOf(id))
    }))

  it.effect("sends the runner's custom headers on the WebSocket upgrade", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped({ requiredHeaders: { "x-api-key": "k1" } })
      const gateway = yield* RunnerGateway
      const events = yield* watch(gateway.events(runnerFor(fake, { "X-Api-Key": "k1" }), "wes-h"))
      yield* events.until(is("Connected"))
      expect(fake.wsConnections.at(-1)).toMatchObject({ client_id: "wes-h", headers: { "x-api-key": "k1" } })
    }))

  it.effect("keeps retrying with backoff while the upgrade is refused, and connects once it is accepted", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped({ requiredHeaders: { "x-api-key": "k1" } })
      const gateway = yield* RunnerGateway
      const events = yield* watch(gateway.events(runnerFor(fake), "wes-r"))
      const attempts = () => fake.requests.filter((r) => r.path.startsWith("/ws")).map((r) => r.at)
      yield* waitUntil(() => attempts().length >= 4, "four refused upgrades")
      // Backoff: the n-th wait is at least half of 50 ms doubled n times (jittered to [d/2, d]).
      const at = attempts()
      for (let n = 0; n < 3; n++) expect(at[n + 1]! - at[n]!).toBeGreaterThanOrEqual(25 * 2 ** n - 1)
      fake.requireHeaders({})
      const connected = yield* events.until(is("Connected"))
      expect(connected).toEqual({ _tag: "Connected" })
      // Each refused attempt was said, and nothing else came before the connection.
      expect(events.seen.slice(0, -1).every(is("Disconnected"))).toBe(true)
      expect(events.seen.length).toBeGreaterThanOrEqual(5)
    }))

  it.effect("reconnects after the runner drops the socket: Disconnected, then Connected, and events flow again", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const events = yield* watch(gateway.events(runnerFor(fake), "wes-d"))
      yield* events.until(is("Connected"))
      fake.dropWebSockets()
      const lost = yield* events.until(is("Disconnected"))
      expect(lost).toMatchObject({ _tag: "Disconnected", reason: expect.stringContaining("1006") })
      yield* events.until(is("Connected"))
      // The new socket is registered under the same client id (the old one was really closed first).
      expect(fake.connectedClients).toContain("wes-d")
      const id = uuid()
      yield* post(fake, { prompt: saveImageWorkflow(), prompt_id: id, client_id: "wes-d" })
      yield* events.until(doneOf(id))
      expect(fake.wsConnections.filter((c) => c.client_id === "wes-d")).toHaveLength(2)
    }))

  it.effect("detects a silent socket with the heartbeat and reconnects", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const events = yield* watch(gateway.events(runnerFor(fake), "wes-s"))
      yield* events.until(is("Connected"))
      fake.silenceWebSockets()
      const lost = yield* events.until(is("Disconnected"))
      expect(lost).toMatchObject({ reason: "no pong or message within 300ms of a ping" })
      yield* events.until(is("Connected"))
      const id = uuid()
      yield* post(fake, { prompt: saveImageWorkflow(), prompt_id: id, client_id: "wes-s" })
      yield* events.until(doneOf(id))
    }))

  it.effect("survives a runner restart and a runner that is down at first", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      yield* Effect.promise(() => fake.refuseConnections())
      const events = yield* watch(gateway.events(runnerFor(fake), "wes-x"))
      // A connection attempt failed while the runner was down.
      expect(yield* events.until(() => true)).toMatchObject({ _tag: "Disconnected" })
      yield* Effect.promise(() => fake.acceptConnections())
      yield* events.until(is("Connected"))

      yield* Effect.promise(() => fake.restart({ downtimeMs: 200 }))
      yield* events.until(is("Disconnected"))
      yield* events.until(is("Connected"))
    }))

  it.effect("takes binary image frames in stride and ignores unknown or malformed messages", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped({ previews: true })
      const gateway = yield* RunnerGateway
      const events = yield* watch(gateway.events(runnerFor(fake), "wes-b"))
      yield* events.until(is("QueueChanged"))
      fake.sendRaw(Buffer.from([0, 0, 0, 1, 0, 0, 0, 2, 1, 2, 3]), "wes-b")
      fake.sendRaw(JSON.stringify({ type: "crystools.monitor", data: { cpu: 3 } }), "wes-b")
      fake.sendRaw("{not json", "wes-b")
      fake.sendRaw(JSON.stringify({ type: "status", data: { bogus: true } }), "wes-b")
      fake.sendRaw(JSON.stringify({ type: "executing", data: { node: null } }), "wes-b")
      fake.sendRaw(JSON.stringify({ type: "status", data: { status: { exec_info: { queue_remaining: 7 } }, extra: 1 } }), "wes-b")
      expect(yield* events.until(is("QueueChanged"))).toEqual({ _tag: "QueueChanged", queue_remaining: 7 })

      const id = uuid()
      yield* post(fake, { prompt: slowWorkflow({ seconds: 0.04, steps: 4 }), prompt_id: id, client_id: "wes-b" })
      yield* events.until(doneOf(id))
      expect(events.seen.filter(is("Progress"))).toHaveLength(4)
      expect(events.seen.filter(is("Disconnected"))).toEqual([])
    }))

  it.effect("reports the node a reconnecting client's prompt is executing (Executing without prompt_id)", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      fake.hold()
      const gateway = yield* RunnerGateway
      const events = yield* watch(gateway.events(runnerFor(fake), "wes-e"))
      yield* events.until(is("Connected"))
      const id = uuid()
      yield* post(fake, { prompt: saveImageWorkflow(), prompt_id: id, client_id: "wes-e" })
      yield* events.until((e) => e._tag === "Executing" && e.prompt_id === id)
      fake.dropWebSockets()
      yield* events.until(is("Connected"))
      expect(yield* events.until(is("Executing"))).toEqual({ _tag: "Executing", prompt_id: null, node: "1" })
      fake.release()
      yield* events.until(doneOf(id))
    }))

  it.effect("closes the socket when the scope of its events closes", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const gateway = yield* RunnerGateway
      const first = yield* Effect.scoped(Effect.flatMap(gateway.events(runnerFor(fake), "wes-t"), Queue.take))
      expect(first).toEqual({ _tag: "Connected" })
      yield* wait(() => fake.waitUntil(() => !fake.connectedClients.includes("wes-t"), 2_000, "the socket to close"))
    }))
})

layer(gatewayLayer(), { excludeTestServices: true })("runner event buffering", (it) => {
  it.effect("drops and reconnects a connection whose bounded inbox overflows under a stalled consumer", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const runner: RunnerTarget = runnerFor(fake)
      const events = yield* runnerEvents(runner, "wes-o", { ...testGatewayOptions, bufferSize: 1, inboxSize: 8 })
      const next = Queue.takeBetween(events, 1, 1024)
      expect(yield* next).toEqual([{ _tag: "Connected" }])
      // The consumer stalls while the runner floods the socket.
      for (let i = 0; i < 200; i++) {
        fake.sendRaw(JSON.stringify({ type: "status", data: { status: { exec_info: { queue_remaining: i } } } }), "wes-o")
      }
      yield* Effect.promise(() => fake.waitUntil(() => !fake.connectedClients.includes("wes-o"), 5_000, "the flooded socket to drop"))
      const drained: Array<RunnerEvent> = []
      while (!drained.some(is("Connected"))) drained.push(...(yield* next))
      const lost = drained.find(is("Disconnected"))
      expect(lost).toMatchObject({ reason: "event buffer overflow: the consumer is too slow" })
      // Only a bounded number of events were kept before the drop: the queue's, the inbox's and
      // the batch the decoder holds while the queue is full (at most an inbox's worth).
      expect(drained.filter(is("QueueChanged")).length).toBeLessThanOrEqual(1 + 8 + 8)
    }))

  /** A type 1 PNG frame of `size` bytes in all. */
  const imageFrame = (size: number) => Buffer.concat([Buffer.from([0, 0, 0, 1, 0, 0, 0, 2]), Buffer.alloc(size - 8, 7)])

  it.effect("takes an image frame up to maxFrameSize; a bigger one drops the connection, which reconnects", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const events = yield* runnerEvents(runnerFor(fake), "wes-f", { ...testGatewayOptions, maxFrameSize: 4096 })
      const next = Queue.takeBetween(events, 1, 1024)
      expect(yield* next).toEqual([{ _tag: "Connected" }])
      fake.sendRaw(imageFrame(4096), "wes-f")
      const first: Array<RunnerEvent> = []
      while (!first.some(is("ImageFrame"))) first.push(...(yield* next))
      expect(first.find(is("ImageFrame"))).toMatchObject({ image: { length: 4088 } })
      fake.sendRaw(imageFrame(4097), "wes-f")
      const seen: Array<RunnerEvent> = []
      while (!seen.some(is("Connected"))) seen.push(...(yield* next))
      expect(seen.find(is("ImageFrame"))).toBeUndefined()
      expect(seen.find(is("Disconnected"))).toMatchObject({ reason: expect.stringMatching(/max payload/i) })
    }))

  it.effect("drops and reconnects a connection whose image frames not yet taken exceed imageBytes under a stalled consumer", () =>
    Effect.gen(function*() {
      const fake = yield* FakeComfyUI.scoped()
      const events = yield* runnerEvents(runnerFor(fake), "wes-b", { ...testGatewayOptions, bufferSize: 1, imageBytes: 8192 })
      const next = Queue.takeBetween(events, 1, 1024)
      expect(yield* next).toEqual([{ _tag: "Connected" }])
      // The consumer takes nothing while 40 KB of images arrive: four fit, then the socket is dropped
      // (the next connection waits for the consumer, which the decoder is waiting for).
      for (let i = 0; i < 20; i++) fake.sendRaw(imageFrame(2048), "wes-b")
      yield* Effect.promise(() => fake.waitUntil(() => !fake.connectedClients.includes("wes-b")))
      const drained: Array<RunnerEvent> = []
      while (!drained.some(is("Connected"))) drained.push(...(yield* next))
      expect(drained.find(is("Disconnected"))).toMatchObject({ reason: "event buffer overflow: the consumer is too slow" })
      // Nothing was taken: at most 8 KiB of images (four frames of 2 KiB) were held in all.
      expect(drained.filter(is("ImageFrame")).length).toBeLessThanOrEqual(4)
    }))
})
