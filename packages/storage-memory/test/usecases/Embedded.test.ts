/**
 * The promise-based facade (`createWes`) over the memory store. The runner side is an in-process
 * gateway that finishes every prompt at once with one output file (unless held), so these tests
 * need no network; examples/embed-in-your-backend runs the same facade against the fake ComfyUI.
 */
import {
  Conflict,
  createWes,
  NoEligibleRunner,
  type PromptHistory,
  type RunnerEvent,
  RunnerGateway,
  RunnerRequestFailed,
  StorageError,
  type StoreServices,
  type SubmitPrompt,
  TemplateService,
  AccountService,
  ValidationError,
  type Wes,
  type WesWorkflowEvent,
  WorkflowNotFound
} from "@wes/core"
import { MemoryStoreLive } from "@wes/storage-memory"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { afterEach, describe, expect, it } from "vitest"
import { smoke } from "./harness.js"

const OUTPUT = new TextEncoder().encode("\x89PNG fake output")

/** A runner that runs each prompt instantly: ExecutionStart, progress, then done, with one output. */
const makeInstantRunner = () => {
  const hub = Effect.runSync(PubSub.unbounded<RunnerEvent>())
  const histories = new Map<string, PromptHistory>()
  const submitted: Array<SubmitPrompt> = []
  const uploads: Array<{ readonly filename: string; readonly text: string }> = []
  const cancels: Array<string> = []
  const gateway = RunnerGateway.of({
    probe: () => Effect.succeed({ version: "0.3.64", devices: [], jobs_api: false }),
    nodeReplacements: () => Effect.succeedNone,
    // No capabilities to read: they stay unknown, and the runner eligible.
    objectInfo: (runner) => Effect.fail(new RunnerRequestFailed({ runner_id: runner.id, status: 404, message: "GET /object_info: 404" })),
    uploadInput: (_runner, file) =>
      Effect.map(Stream.runCollect(Stream.decodeText(file.content)), (chunks) => {
        uploads.push({ filename: file.filename, text: Array.from(chunks).join("") })
        return { name: file.filename, subfolder: "wes", type: "input" }
      }),
    submit: (_runner, prompt) =>
      Effect.gen(function*() {
        submitted.push(prompt)
        const id = prompt.prompt_id
        histories.set(id, {
          outcome: "success",
          outputs: [{ node_id: "3", filename: `${id}.png`, subfolder: "", type: "output" }],
          started_at: null,
          completed_at: null,
          error: null
        })
        // real time: the fake runner's run time (never zero on a real one), so its events come after
        // the driver recorded the submission, as they do in production; reconciliation would find it anyway.
        yield* PubSub.publishAll(hub, [
          { _tag: "ExecutionStart", prompt_id: id, timestamp: null },
          { _tag: "Executing", prompt_id: id, node: "1" },
          { _tag: "Progress", prompt_id: id, node: "1", value: 1, max: 2 },
          { _tag: "Progress", prompt_id: id, node: "1", value: 2, max: 2 },
          { _tag: "PromptDone", prompt_id: id }
        ]).pipe(Effect.delay("20 millis"), Effect.forkDetach)
        return { prompt_id: id, number: submitted.length }
      }),
    queue: () => Effect.succeed({ running: [], pending: [] }),
    history: (_runner, id) => Effect.succeed(Option.fromNullishOr(histories.get(id))),
    status: (_runner, id) =>
      Effect.sync(() => {
        const history = histories.get(id)
        return history === undefined ? { _tag: "Unknown" as const } : { _tag: "Finished" as const, history }
      }),
    cancel: (_runner, id) => Effect.sync(() => void cancels.push(id)),
    download: () => Effect.succeed({ content_type: "image/png", content: Stream.make(OUTPUT) }),
    events: () =>
      Effect.gen(function*() {
        const out = yield* Effect.acquireRelease(Queue.bounded<RunnerEvent>(64), Queue.shutdown)
        const published = yield* PubSub.subscribe(hub)
        yield* Queue.offer(out, { _tag: "Connected" })
        yield* Effect.forkScoped(Effect.forever(Effect.flatMap(PubSub.take(published), (e) => Queue.offer(out, e))))
        return out
      })
  })
  return { layer: Layer.succeed(RunnerGateway, gateway), submitted, uploads, cancels }
}

const fastDispatch = { scanInterval: "50 millis", claimInterval: "50 millis", reconcileInterval: "100 millis", idleAfter: "1 second" } as const

const open: Array<Wes> = []
const start = async (options: { readonly dispatcher?: false } = {}) => {
  const runner = makeInstantRunner()
  const wes = await createWes({ store: MemoryStoreLive, gateway: runner.layer, dispatcher: options.dispatcher ?? fastDispatch })
  open.push(wes)
  return { wes, runner }
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((w) => w.close()))
})

/** The rejection of `promise` (fails the test when it resolves). */
const rejection = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (e) {
    return e
  }
  throw new Error("expected a rejection")
}

describe("createWes", () => {
  it("runs a workflow with parameters end to end and serves its output", async () => {
    const { wes, runner } = await start()
    const user = await wes.createUser({ tier: "pro", email: "dev@example.com" })
    expect(user).toMatchObject({ tier: "pro", email: "dev@example.com" })
    expect(typeof user.created_at).toBe("string")
    const token = await wes.issueToken(user, { name: "ci" })
    expect((await wes.authenticate(`Bearer ${token.token}`)).id).toBe(user.id)
    const registered = await wes.registerRunner(user.id, { name: "gpu-1", endpoint: "http://127.0.0.1:8188", tags: ["GPU"] })
    expect(registered.tags).toEqual(["gpu"])

    const json = {
      ...smoke({ color: "$text(color, 255)" }),
      "4": { class_type: "LoadImage", inputs: { image: "$file(photo)" } }
    }
    const created = await wes.createWorkflow(user, {
      name: "first",
      workflow_json: JSON.stringify(json),
      tags: ["gpu"],
      params: { $color: 16711680, $photo: { filename: "cat.png", content_type: "image/png", data: new TextEncoder().encode("PNGDATA") } }
    })
    expect(created).toMatchObject({ name: "first", status: "accepted", user_runner_id: registered.id })

    const events: Array<WesWorkflowEvent> = []
    for await (const event of wes.follow(user, created.id)) events.push(event)
    expect(events[0]!.type).toBe("status")
    expect(events.at(-1)).toMatchObject({ type: "done", data: { status: "completed" } })
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(["progress", "output"]))
    expect(events.map((e) => e.seq)).toEqual([...events.map((e) => e.seq)].sort((a, b) => a - b))

    const done = await wes.waitForWorkflow(user, created.id)
    expect(done.status).toBe("completed")
    expect(done.workflow_params).toEqual(expect.arrayContaining([["$text(color)", "16711680"]]))
    // The file went to the runner and the prompt points at it.
    expect(runner.uploads).toEqual([{ filename: expect.stringContaining("cat.png"), text: "PNGDATA" }])
    expect(runner.submitted[0]!.prompt["4"]).toEqual({ class_type: "LoadImage", inputs: { image: `wes/${runner.uploads[0]!.filename}` } })

    const outputs = await wes.outputs(user, created.id)
    expect(outputs).toHaveLength(1)
    const download = await wes.downloadOutput(user, created.id, outputs[0]!.id)
    expect(download).toMatchObject({ content_type: "image/png", size: OUTPUT.length, output: { filename: `${created.id}.png` } })
    expect(download.bytes).toEqual(OUTPUT)
    const streamed = await wes.openOutput(user, created.id, outputs[0]!.id)
    const chunks: Array<Uint8Array> = []
    for await (const chunk of streamed.content) chunks.push(chunk)
    expect(Buffer.concat(chunks)).toEqual(Buffer.from(OUTPUT))

    const listed = await wes.listWorkflows(user, { status: "completed" })
    expect(listed).toMatchObject({ total: 1, workflows: [{ id: created.id, status: "completed" }] })
    // A finished workflow's stream is its status, then done.
    const replay: Array<string> = []
    for await (const event of wes.follow(user, created.id)) replay.push(event.type)
    expect(replay).toEqual(["status", "done"])
  })

  it("rejects with the core's typed errors", async () => {
    const { wes } = await start()
    const user = await wes.createUser({ tier: "free" })
    const noRunner = await rejection(wes.createWorkflow(user, { name: "a", workflow_json: smoke() }))
    expect(noRunner).toBeInstanceOf(NoEligibleRunner)
    expect(noRunner).toMatchObject({ _tag: "NoEligibleRunner" })
    await wes.registerRunner(user, { name: "r", endpoint: "http://127.0.0.1:8188" })
    const badJson = await rejection(wes.createWorkflow(user, { name: "a", workflow_json: "{not json" }))
    expect(badJson).toBeInstanceOf(ValidationError)
    expect(badJson).toMatchObject({ details: [{ field: "workflow_json", message: "is not valid JSON" }] })
    const missingParam = await rejection(wes.createWorkflow(user, { name: "a", workflow_json: smoke({ color: "$text(color)" }) }))
    expect(missingParam).toMatchObject({ _tag: "ValidationError", message: expect.stringContaining("Parameter validation failed") })
    const badRunner = await rejection(wes.registerRunner(user, { name: "r", endpoint: "ftp://example.com" }))
    expect(badRunner).toBeInstanceOf(ValidationError)
    expect(await rejection(wes.getWorkflow(user, crypto.randomUUID()))).toMatchObject({ _tag: "WorkflowNotFound", message: "Workflow not found" })
    expect(await rejection(wes.getUser(crypto.randomUUID()))).toMatchObject({ _tag: "UserNotFound", message: "User not found" })
    expect(await rejection(wes.authenticate("Bearer nope"))).toMatchObject({ _tag: "InvalidToken" })
    const followMissing = (async () => {
      for await (const _ of wes.follow(user, crypto.randomUUID())) throw new Error("no events expected")
    })()
    expect(await rejection(followMissing)).toBeInstanceOf(WorkflowNotFound)

    const w = await wes.createWorkflow(user, { name: "a", workflow_json: smoke() })
    expect((await wes.waitForWorkflow(user, w.id)).status).toBe("completed")
    const late = await rejection(wes.cancelWorkflow(user, w.id))
    expect(late).toBeInstanceOf(Conflict)
    expect(late).toMatchObject({ message: "Workflow is already completed" })
  })

  it("without the dispatcher, workflows wait; cancel and follow still work", async () => {
    const { wes, runner } = await start({ dispatcher: false })
    const user = await wes.createUser({ tier: "free" })
    await wes.registerRunner(user, { name: "r", endpoint: "http://127.0.0.1:8188" })
    const w = await wes.createWorkflow(user, { name: "waits", workflow_json: smoke() })

    // Breaking out of a stream that would never end stops it.
    const seen: Array<string> = []
    for await (const event of wes.follow(user, w.id)) {
      seen.push(`${event.type}:${(event.data as { status: string }).status}`)
      break
    }
    expect(seen).toEqual(["status:accepted"])

    const iterator = wes.follow(user, w.id)[Symbol.asyncIterator]()
    expect((await iterator.next()).value).toMatchObject({ type: "status", data: { status: "accepted" } })
    const cancelled = await wes.cancelWorkflow(user, w.id)
    expect(cancelled.status).toBe("cancelled")
    const rest: Array<string> = []
    for (let r = await iterator.next(); r.done !== true; r = await iterator.next()) rest.push(`${r.value.type}:${(r.value.data as { status: string }).status}`)
    expect(rest).toEqual(["status:cancelled", "done:cancelled"])
    expect(runner.submitted).toEqual([])
    expect((await wes.getWorkflow(user, w.id)).completed_at).not.toBeNull()
  })

  it("runs any Effect over the services with typed failures", async () => {
    const { wes } = await start({ dispatcher: false })
    const user = await wes.createUser({ tier: "free" })
    const template = await wes.run(Effect.gen(function*() {
      const owner = yield* (yield* AccountService).getUser(user.id)
      return yield* (yield* TemplateService).create(owner, { name: "solid", description: "a solid image", body: smoke() })
    }))
    expect(template.name).toBe("solid")
    await wes.registerRunner(user, { name: "r", endpoint: "http://127.0.0.1:8188" })
    const fromTemplate = await wes.createWorkflow(user, { name: "t", template_id: template.id })
    expect(fromTemplate.workflow_json).toEqual(smoke())
    expect(await rejection(wes.run(Effect.fail(new Conflict({ message: "typed" }))))).toBeInstanceOf(Conflict)
  })

  it("rejects when a layer cannot start, and close is idempotent", async () => {
    const broken: Layer.Layer<StoreServices, StorageError> = Layer.unwrap(Effect.fail(new StorageError({ message: "database unreachable" })))
    const error = await rejection(createWes({ store: broken, gateway: makeInstantRunner().layer }))
    expect(error).toBeInstanceOf(StorageError)
    expect(error).toMatchObject({ message: "database unreachable" })

    const { wes } = await start()
    await wes.close()
    await wes.close()
  })
})
