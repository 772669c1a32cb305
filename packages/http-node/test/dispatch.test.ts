/**
 * Workflows really running: the server with the dispatcher and the real runner client, against
 * fake ComfyUI servers driven into every fault the issue lists.
 */
import { FakeComfyUI, saveImageWorkflow, slowWorkflow, solidPng, textWorkflow } from "@wes/runner-client/testing"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import {
  type ErrorBody,
  fastDispatch,
  json,
  readJson,
  type RunnerJson,
  startServer,
  type TestServer,
  type WorkflowDetailJson,
  workflowForm,
  type WorkflowSummaryJson
} from "./harness.js"
import { poll } from "./polling.js"

let server: TestServer
const fakes: Array<FakeComfyUI> = []

beforeAll(async () => { server = await startServer({ dispatcher: fastDispatch, tiers: { pro: { active_workflows: 500 } } }) })
afterAll(async () => { await server.close() })
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})

const fake = async () => {
  const f = await FakeComfyUI.start()
  fakes.push(f)
  return f
}

type User = Awaited<ReturnType<TestServer["user"]>>

const addRunner = async (u: User, f: FakeComfyUI, tags: Array<string> = [], name = "runner") => {
  const res = await server.fetch("/v1/runner", json({ name, endpoint: f.url, tags }, u.auth))
  expect(res.status).toBe(201)
  return readJson<RunnerJson>(res)
}

const submit = async (u: User, workflow: unknown, fields: Parameters<typeof workflowForm>[0] = {}) => {
  const res = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "run", ...fields }, workflow) })
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${await res.text()}`)
  return readJson<WorkflowSummaryJson>(res)
}

const get = async (u: User, id: string) => readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${id}`, { headers: u.auth }))

const TERMINAL = ["completed", "failed", "invalid", "cancelled"]

/** Polls the workflow until its status is one of `statuses`. */
const untilStatus = (u: User, id: string, statuses: ReadonlyArray<string> = TERMINAL, timeoutMs = 15_000) => {
  let last = ""
  return poll(() => `workflow ${id} to be ${statuses.join("|")} (is ${last})`, async () => {
    const w = await get(u, id)
    last = w.status
    return statuses.includes(w.status) ? w : undefined
  }, timeoutMs)
}

/**
 * Runs one more workflow on the user's one runner to its end. The runner takes prompts in order
 * and WES reads its events in order: once this one completed, whatever was still to come for an
 * earlier workflow has come.
 */
const runAnother = async (u: User) => {
  const marker = await submit(u, saveImageWorkflow({ prefix: "marker" }))
  expect((await untilStatus(u, marker.id)).status).toBe("completed")
}

interface Event {
  readonly id: string
  readonly event: string
  readonly data: Record<string, unknown>
}

/** Every event of a workflow's stream until `done`. */
const follow = async (u: User, id: string, lastEventId?: string): Promise<Array<Event>> => {
  const res = await server.fetch(`/v1/workflow/${id}/subscribe`, { headers: { ...u.auth, ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }) } })
  const text = await res.text()
  return text.split("\n\n").filter((b) => b.startsWith("id:")).map((block) => {
    const fields = Object.fromEntries(block.split("\n").map((l) => [l.slice(0, l.indexOf(":")), l.slice(l.indexOf(":") + 1).trim()]))
    return { id: fields["id"]!, event: fields["event"]!, data: JSON.parse(fields["data"]!) as Record<string, unknown> }
  })
}

describe("running workflows", () => {
  it("runs a workflow to completion with progress events and a downloadable output file", async () => {
    const f = await fake()
    const u = await server.user("pro")
    await addRunner(u, f)
    const w = await submit(u, slowWorkflow({ seconds: 0.3, steps: 3, prefix: "e2e/out" }))
    // Last-Event-ID 0: the current status, then every event from the first one.
    const [current, ...events] = await follow(u, w.id, "0")
    expect(current!.event).toBe("status")
    const statuses = events.filter((e) => e.event === "status").map((e) => e.data["status"])
    expect(statuses).toEqual(["accepted", "uploaded", "queued", "running", "completed"])
    expect(events.filter((e) => e.event === "progress").map((e) => [e.data["value"], e.data["max"]])).toEqual([[1, 3], [2, 3], [3, 3]])
    expect(events.some((e) => e.event === "executing" && e.data["node"] === "2")).toBe(true)
    // The overall percent: nodes finished out of 3, refined by node 2's steps.
    expect(events.filter((e) => e.event === "executing" || e.event === "progress").map((e) => [e.event, e.data["percent"]])).toEqual([
      ["executing", 0], ["executing", 33], ["progress", 44], ["progress", 55], ["progress", 66], ["executing", 66]
    ])
    const outputEvents = events.filter((e) => e.event === "output")
    expect(outputEvents).toHaveLength(1)
    expect(events.at(-1)?.event).toBe("done")
    expect(events.map((e) => Number(e.id))).toEqual(events.map((_, i) => i + 1))

    const done = await get(u, w.id)
    expect(done).toMatchObject({ status: "completed", prompt_id: w.id, error_node: null, exception_type: null })
    expect(done.started_at).not.toBeNull()
    expect(done.completed_at).not.toBeNull()
    const { outputs } = await readJson<{ outputs: Array<{ id: string; filename: string; type: string; content_type: string; size: number; node_id: string }> }>(
      await server.fetch(`/v1/workflow/${w.id}/outputs`, { headers: u.auth })
    )
    expect(outputs).toHaveLength(1)
    expect(outputs[0]).toMatchObject({ node_id: "3", type: "output", content_type: "image/png", filename: "out_00001_.png" })
    expect(outputEvents[0]!.data).toEqual(outputs[0])
    const file = await server.fetch(`/v1/workflow/${w.id}/outputs/${outputs[0]!.id}`, { headers: u.auth })
    expect(file.headers.get("content-type")).toBe("image/png")
    const bytes = new Uint8Array(await file.arrayBuffer())
    expect(bytes.length).toBe(outputs[0]!.size)
    expect(Array.from(bytes.slice(0, 8))).toEqual([137, 80, 78, 71, 13, 10, 26, 10])
    expect(f.submissions.filter((s) => s.prompt_id === w.id)).toHaveLength(1)
    expect(f.submissions[0]!.body).toMatchObject({ extra_data: { wes_workflow_id: w.id } })
  })

  it("posts the first prompt of an idle runner once its WebSocket is open, so none of its live events is lost", async () => {
    const f = await fake()
    // ComfyUI drops events for a client that is not connected yet; a slow socket must not cost them.
    f.slowUpgrades(600)
    const u = await server.user("pro")
    await addRunner(u, f)
    const w = await submit(u, saveImageWorkflow({ prefix: "first" }))
    const events = await follow(u, w.id, "0")
    expect(events.filter((e) => e.event === "executing").map((e) => e.data["node"])).toEqual(["1", "2", "3"])
    expect(events.at(-1)).toMatchObject({ event: "done", data: { status: "completed" } })
  })

  it("records a node failure with error_node, exception_type and exception_message", async () => {
    const f = await fake()
    f.failNode({ classType: "ImageInvert", exceptionType: "torch.OutOfMemoryError", exceptionMessage: "CUDA out of memory" })
    const u = await server.user("pro")
    await addRunner(u, f)
    const w = await submit(u, saveImageWorkflow())
    const done = await untilStatus(u, w.id)
    expect(done).toMatchObject({ status: "failed", error_node: "2", exception_type: "torch.OutOfMemoryError", exception_message: "CUDA out of memory" })
    expect(done.completed_at).not.toBeNull()
  })

  it("marks a prompt the runner rejects as invalid, keeping the runner's reason", async () => {
    // A runner whose capabilities are unknown: WES cannot refuse the unknown node at create (it
    // would, with a 400, for a runner it has read: capabilities.test.ts), so the runner refuses it.
    const f = await FakeComfyUI.start({ objectInfo: { failStatus: 500 } })
    fakes.push(f)
    const u = await server.user("pro")
    await addRunner(u, f)
    const w = await submit(u, { ...saveImageWorkflow(), "1": { class_type: "NoSuchNode", inputs: {} } })
    const done = await untilStatus(u, w.id)
    expect(done.status).toBe("invalid")
    expect(done.exception_type).toBe("invalid_prompt")
    expect(done.exception_message).toContain("NoSuchNode")
  })

  // A valid text output beside a SaveImage without its images: ComfyUI queues the valid part and
  // answers 200 with node_errors for the other (server.py's post_prompt, 0.3.45 to 0.3.64).
  const partlyInvalid = {
    ...textWorkflow("partly"),
    "3": { class_type: "SaveImage", inputs: { filename_prefix: "never" } }
  }

  it("a prompt answered 200 with node_errors after the runner ran it is invalid, not completed", async () => {
    const f = await fake()
    f.answerPromptsAfter("finished")
    // ComfyUI is slow to take the prompt back (queue delete, queue read): WES sees the run end first.
    f.slowHttp(300)
    const u = await server.user("pro")
    await addRunner(u, f)
    const w = await submit(u, partlyInvalid)
    const done = await untilStatus(u, w.id)
    expect(done).toMatchObject({ status: "invalid", error_node: "3", exception_type: "prompt_outputs_failed_validation" })
    expect(done.exception_message).toContain("Required input is missing: images")
    // The runner did run the valid part before it answered.
    expect(f.state.history).toContain(w.id)
    // Not recorded as started either.
    expect(done.started_at).toBeNull()
  })

  it("a prompt answered 200 with node_errors while the runner runs it is invalid, and taken off the runner", async () => {
    const f = await fake()
    f.hold()
    f.answerPromptsAfter("started")
    const u = await server.user("pro")
    await addRunner(u, f)
    const w = await submit(u, partlyInvalid)
    const done = await untilStatus(u, w.id)
    expect(done).toMatchObject({ status: "invalid", error_node: "3", exception_type: "prompt_outputs_failed_validation" })
    // WES interrupted what the runner had started.
    await f.whenFinished(w.id)
    const history = await (await fetch(`${f.url}/history/${w.id}`)).json() as Record<string, { status: { messages: Array<[string, unknown]> } }>
    expect(history[w.id]!.status.messages.map(([type]) => type)).toContain("execution_interrupted")
    f.release()
    expect((await get(u, w.id)).status).toBe("invalid")
  })

  it("uploads a file parameter to the runner, substitutes its name, and deletes the upload afterwards", async () => {
    const f = await fake()
    const u = await server.user("pro")
    await addRunner(u, f)
    const wf = { ...saveImageWorkflow(), "1": { class_type: "LoadImage", inputs: { image: "$file(photo)" } } }
    const png = solidPng(8, 8, 0x00ff00)
    const w = await submit(u, wf, { $photo: [new Uint8Array(png), "cat.png"] as const })
    const done = await untilStatus(u, w.id)
    expect(done.status).toBe("completed")
    expect(f.uploads).toHaveLength(1)
    const sent = f.submissions.find((s) => s.prompt_id === w.id)!.body as { prompt: Record<string, { inputs: { image?: string } }> }
    expect(sent.prompt["1"]!.inputs.image).toBe(`wes/${f.uploads[0]!.name}`)
    expect(f.uploads[0]!.name).toContain("cat.png")
    // The stored upload is gone once the workflow finished: a rerun must send the file again.
    const rerun = await server.fetch(`/v1/workflow/${w.id}/rerun`, { method: "POST", headers: u.auth, body: new FormData() })
    expect(rerun.status).toBe(400)
    expect((await readJson<ErrorBody>(rerun)).details?.[0]?.field).toBe("$photo")
  })

  it("delivers uploads byte for byte, both a small one kept in memory and a 3 MB one spilled to disk", async () => {
    const f = await fake()
    const u = await server.user("pro")
    await addRunner(u, f)
    const wf = {
      ...saveImageWorkflow(),
      "1": { class_type: "LoadImage", inputs: { image: "$file(small)" } },
      "5": { class_type: "LoadImage", inputs: { image: "$file(large)" } }
    }
    const small = new Uint8Array(solidPng(8, 8, 0x0000ff))
    // Past the server's 1 MiB in-memory budget, with a pattern that shows any lost or moved byte.
    const large = new Uint8Array(3 * 1024 * 1024 + 17).map((_, i) => (i * 7 + (i >> 13)) & 0xff)
    const w = await submit(u, wf, { $small: [small, "small.png"] as const, $large: [large, "large.bin"] as const })
    expect((await untilStatus(u, w.id)).status).toBe("completed")
    const received = async (suffix: string) => {
      const upload = f.uploads.find((up) => up.name?.endsWith(suffix))!
      const res = await fetch(`${f.url}/view?filename=${encodeURIComponent(upload.name!)}&subfolder=${upload.subfolder}&type=input`)
      return new Uint8Array(await res.arrayBuffer())
    }
    expect(Buffer.compare(await received("small.png"), small)).toBe(0)
    expect(Buffer.compare(await received("large.bin"), large)).toBe(0)
  })

  it("cancels a workflow waiting in the runner's queue: removed from the queue, stays cancelled", async () => {
    const f = await fake()
    f.pauseQueue()
    const u = await server.user("pro")
    await addRunner(u, f)
    const w = await submit(u, saveImageWorkflow())
    await untilStatus(u, w.id, ["queued"])
    expect(f.state.pending).toContain(w.id)
    const res = await server.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })
    expect(res.status).toBe(200)
    expect(f.state.pending).not.toContain(w.id)
    f.resumeQueue()
    await runAnother(u)
    expect((await get(u, w.id)).status).toBe("cancelled")
    expect(f.state.history).not.toContain(w.id)
  })

  it("cancels a running workflow: interrupted on the runner, and it stays cancelled", async () => {
    const f = await fake()
    const u = await server.user("pro")
    await addRunner(u, f)
    const w = await submit(u, slowWorkflow({ seconds: 2, steps: 20 }))
    await untilStatus(u, w.id, ["running"])
    const cancelledAt = Date.now()
    await server.fetch(`/v1/workflow/${w.id}/cancel`, { method: "POST", headers: u.auth })
    await f.whenFinished(w.id)
    // The runner stopped it early, and its own history says it was interrupted.
    expect(Date.now() - cancelledAt).toBeLessThan(1500)
    const history = await readJson<Record<string, { status: { messages: Array<[string, unknown]> } }>>(await fetch(`${f.url}/history/${w.id}`))
    expect(history[w.id]!.status.messages.at(-1)![0]).toBe("execution_interrupted")
    await runAnother(u)
    expect((await get(u, w.id)).status).toBe("cancelled")
  })

  it("completes correctly when the WebSocket drops mid-run", async () => {
    const f = await fake()
    const u = await server.user("pro")
    await addRunner(u, f)
    const w = await submit(u, slowWorkflow({ seconds: 0.8, steps: 8 }))
    await untilStatus(u, w.id, ["running"])
    f.dropWebSockets()
    const done = await untilStatus(u, w.id)
    expect(done.status).toBe("completed")
    expect(f.submissions.filter((s) => s.prompt_id === w.id)).toHaveLength(1)
  })

  it("completes when the WebSocket stays open but silent", async () => {
    const f = await fake()
    const u = await server.user("pro")
    await addRunner(u, f)
    const w = await submit(u, slowWorkflow({ seconds: 0.5, steps: 5 }))
    await untilStatus(u, w.id, ["running"])
    f.silenceWebSockets()
    const done = await untilStatus(u, w.id)
    expect(done.status).toBe("completed")
  })

  it("fails a workflow with RunnerLost when the runner restarts mid-run", async () => {
    const f = await fake()
    const u = await server.user("pro")
    await addRunner(u, f)
    const w = await submit(u, slowWorkflow({ seconds: 5, steps: 50 }))
    await untilStatus(u, w.id, ["running"])
    await f.restart()
    const done = await untilStatus(u, w.id)
    expect(done).toMatchObject({ status: "failed", exception_type: "RunnerLost" })
  })

  it("retries an unreachable runner, moves to another, and fails with RunnerUnavailable when none answers", async () => {
    const [a, b] = [await fake(), await fake()]
    const u = await server.user("pro")
    const ra = await addRunner(u, a, ["pool"], "a")
    const rb = await addRunner(u, b, ["pool"], "b")
    a.refuseConnections()
    const moved: Array<string> = []
    for (let i = 0; i < 2; i++) moved.push((await submit(u, saveImageWorkflow(), { tags: "pool" })).id)
    for (const id of moved) {
      const done = await untilStatus(u, id)
      expect(done).toMatchObject({ status: "completed", user_runner_id: rb.id })
    }
    expect(a.submissions).toHaveLength(0)
    b.refuseConnections()
    const stuck = await submit(u, saveImageWorkflow(), { tags: "pool" })
    const failed = await untilStatus(u, stuck.id)
    expect(failed).toMatchObject({ status: "failed", exception_type: "RunnerUnavailable" })
    expect(failed.exception_message).toContain("No runner could take the workflow")
    expect([ra.id, rb.id]).toContain(failed.user_runner_id)
  })

  it("routes by tags across three runners", async () => {
    const [a, b, ab] = [await fake(), await fake(), await fake()]
    const u = await server.user("pro")
    await addRunner(u, a, ["red"], "a")
    await addRunner(u, b, ["blue"], "b")
    await addRunner(u, ab, ["red", "blue"], "ab")
    const both = await submit(u, saveImageWorkflow(), { tags: "red,blue" })
    const red = await submit(u, saveImageWorkflow(), { tags: "blue" })
    for (const w of [both, red]) expect((await untilStatus(u, w.id)).status).toBe("completed")
    expect(ab.submissions.map((s) => s.prompt_id)).toContain(both.id)
    expect([...a.submissions, ...b.submissions].map((s) => s.prompt_id)).not.toContain(both.id)
    expect(a.submissions.map((s) => s.prompt_id)).not.toContain(red.id)
  })

  it("shares load between two runners: least in flight first", async () => {
    const [a, b] = [await fake(), await fake()]
    a.pauseQueue()
    b.pauseQueue()
    const u = await server.user("pro")
    await addRunner(u, a, [], "a")
    await addRunner(u, b, [], "b")
    const ids: Array<string> = []
    // Eight: each runner holds at most concurrencyPerRunner (4) prompts at once.
    for (let i = 0; i < 8; i++) ids.push((await submit(u, saveImageWorkflow({ color: i }))).id)
    await Promise.all(ids.map((id) => untilStatus(u, id, ["queued"])))
    expect([a.state.pending.length, b.state.pending.length]).toEqual([4, 4])
    const positions = (await Promise.all(ids.map((id) => get(u, id)))).map((w) => w.queue_number).sort()
    expect(positions).toEqual([1, 1, 2, 2, 3, 3, 4, 4])
    a.resumeQueue()
    b.resumeQueue()
    for (const id of ids) expect((await untilStatus(u, id)).status).toBe("completed")
  })

  it("reruns with changed parameters: the runner receives the new value", async () => {
    const f = await fake()
    const u = await server.user("pro")
    await addRunner(u, f)
    const wf = saveImageWorkflow({ prefix: "$text(prefix, first)" })
    const original = await submit(u, wf)
    await untilStatus(u, original.id)
    const form = new FormData()
    form.append("$prefix", "second")
    const rerun = await readJson<WorkflowSummaryJson>(await server.fetch(`/v1/workflow/${original.id}/rerun`, { method: "POST", headers: u.auth, body: form }))
    expect((await untilStatus(u, rerun.id)).status).toBe("completed")
    const bodies = f.submissions.map((s) => (s.body as { prompt: Record<string, { inputs: Record<string, unknown> }> }).prompt["3"]!.inputs["filename_prefix"])
    expect(bodies).toEqual(["first", "second"])
  })

  it("runs 100 concurrent workflows over 4 runners, each submitted exactly once", async () => {
    const runners = await Promise.all([fake(), fake(), fake(), fake()])
    const u = await server.user("pro")
    for (const [i, f] of runners.entries()) await addRunner(u, f, [], `r${i}`)
    const ids = await Promise.all(Array.from({ length: 100 }, (_, i) => submit(u, saveImageWorkflow({ color: i }))).map((p) => p.then((w) => w.id)))
    const results = await Promise.all(ids.map((id) => untilStatus(u, id, TERMINAL, 60_000)))
    expect(results.every((w) => w.status === "completed")).toBe(true)
    const submitted = runners.flatMap((f) => f.submissions.map((s) => s.prompt_id))
    expect(submitted).toHaveLength(100)
    expect(new Set(submitted)).toEqual(new Set(ids))
    expect(runners.every((f) => f.submissions.length > 0)).toBe(true)
  })

  it("replays events after Last-Event-ID while a workflow runs", async () => {
    const f = await fake()
    const u = await server.user("pro")
    await addRunner(u, f)
    const w = await submit(u, slowWorkflow({ seconds: 0.6, steps: 3 }))
    await untilStatus(u, w.id, ["running"])
    const replayed = await follow(u, w.id, "2")
    expect(replayed[0]!.event).toBe("status")
    expect(replayed.slice(1).map((e) => Number(e.id))).toEqual(replayed.slice(1).map((_, i) => i + 3))
    expect(replayed.slice(1).filter((e) => e.event === "status").map((e) => e.data["status"])).toEqual(["queued", "running", "completed"])
    expect(replayed.at(-1)?.event).toBe("done")
  })
})
