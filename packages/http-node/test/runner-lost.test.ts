/**
 * Runners that stop answering for good (issue 32): after `runnerLostAfter` (WES_RUNNER_LOST_AFTER,
 * shortened here) the workflows queued or running on them end `failed` with `RunnerLost`, or are
 * retried on another eligible runner; a runner that comes back later still holding their prompts
 * has them removed instead of running them.
 */
import { FakeComfyUI, saveImageWorkflow } from "@wes/runner-client/testing"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { fastDispatch, json, readJson, type RunnerJson, startServer, type TestServer, type WorkflowDetailJson, workflowForm, type WorkflowSummaryJson } from "./harness.js"
import { poll } from "./polling.js"

const LOST_AFTER_MS = 1500

let server: TestServer
const fakes: Array<FakeComfyUI> = []

beforeAll(async () => {
  server = await startServer({ dispatcher: { ...fastDispatch, runnerLostAfter: `${LOST_AFTER_MS} millis` } })
})
afterAll(async () => {
  await server.close()
})
afterEach(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
})

type User = Awaited<ReturnType<TestServer["user"]>>

const fake = async () => {
  const f = await FakeComfyUI.start()
  fakes.push(f)
  return f
}

const addRunner = async (u: User, f: FakeComfyUI, name: string) => {
  const res = await server.fetch("/v1/runner", json({ name, endpoint: f.url }, u.auth))
  expect(res.status).toBe(201)
  return readJson<RunnerJson>(res)
}

const submit = async (u: User, color: number) => {
  const res = await server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "lost" }, saveImageWorkflow({ color })) })
  expect(res.status).toBe(201)
  return readJson<WorkflowSummaryJson>(res)
}

const get = async (u: User, id: string) => readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${id}`, { headers: u.auth }))

/** Waits until every workflow of `ids` satisfies `ok`; returns their details. */
const until = (u: User, ids: ReadonlyArray<string>, what: string, ok: (w: WorkflowDetailJson) => boolean) =>
  poll(what, async () => {
    const all = await Promise.all(ids.map((id) => get(u, id)))
    return all.every(ok) ? all : undefined
  }, 20_000, 25)

/** ComfyUI's history messages of a prompt on `f` (none when it has no entry). */
const messages = async (f: FakeComfyUI, id: string) => {
  const entry = (await (await fetch(`${f.url}/history/${id}`)).json() as Record<string, { status: { messages: Array<[string, unknown]> } }>)[id]
  return entry?.status.messages.map(([type]) => type) ?? []
}

describe("a runner that stays unreachable", () => {
  it("stopped for good: its running and queued workflows end failed with RunnerLost, not before runnerLostAfter", async () => {
    const a = await fake()
    a.hold()
    const u = await server.user("free")
    await addRunner(u, a, "a")
    const [first, second] = [await submit(u, 1), await submit(u, 2)]
    await until(u, [first.id, second.id], "one running and one queued on a", (w) => w.status === (w.id === first.id ? "running" : "queued"))
    const stoppedAt = Date.now()
    await a.close()
    for (const done of await until(u, [first.id, second.id], "both to end", (w) => w.status === "failed")) {
      expect(done).toMatchObject({ status: "failed", exception_type: "RunnerLost", error_node: null })
      expect(done.exception_message).toContain("The runner could not be reached for 1s 500ms")
      expect(Date.parse(done.completed_at!) - stoppedAt).toBeGreaterThanOrEqual(LOST_AFTER_MS)
    }
  })

  it("retried on a second runner; the first, coming back later with the prompts, has them removed and runs neither", async () => {
    const a = await fake()
    a.hold()
    const u = await server.user("pro")
    const ra = await addRunner(u, a, "a")
    const [first, second] = [await submit(u, 3), await submit(u, 4)]
    const ids = [first.id, second.id]
    await until(u, ids, "one running and one queued on a", (w) => w.status === (w.id === first.id ? "running" : "queued"))
    const b = await fake()
    const rb = await addRunner(u, b, "b")
    // The network to a fails; ComfyUI itself keeps both prompts (one running, held; one pending).
    await a.refuseConnections()
    await until(u, ids, "both to be retried on b", (w) => w.user_runner_id === rb.id)
    // a answers again while WES still watches it: the prompts it holds are taken back.
    await a.acceptConnections()
    await a.waitUntil(() => a.state.running === null && a.state.pending.length === 0, 10_000, "a's queue to be emptied by WES")
    a.release()
    for (const done of await until(u, ids, "both to complete on b", (w) => w.status === "completed")) {
      expect(done).toMatchObject({ user_runner_id: rb.id })
      expect(done.attempts).toMatchObject([{ runner_id: ra.id, exception_type: "RunnerLost" }])
    }
    // a started the first and was interrupted; it never ran the second. Each was posted once to each runner.
    expect(await messages(a, first.id)).toContain("execution_interrupted")
    expect(await messages(a, first.id)).not.toContain("execution_success")
    expect(await messages(a, second.id)).toEqual([])
    for (const f of [a, b]) {
      expect(ids.map((id) => f.submissions.filter((s) => s.prompt_id === id && s.status === 200).length)).toEqual([1, 1])
    }
  })
})
