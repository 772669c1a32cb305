/**
 * Scheduling over HTTP (issue 17) against fake ComfyUI servers: priorities, fair share on a
 * shared managed runner under a burst, and every prompt posted once.
 */
import { FakeComfyUI } from "@wes/runner-client/testing"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import {
  ADMIN_TOKEN,
  type ErrorBody,
  fastDispatch,
  json,
  readJson,
  type RunnerJson,
  smokeWorkflow,
  startServer,
  type TestServer,
  type WorkflowDetailJson,
  workflowForm,
  type WorkflowSummaryJson
} from "./harness.js"
import { poll, until } from "./polling.js"

const CONCURRENCY = 2
let server: TestServer
const fakes: Array<FakeComfyUI> = []

beforeAll(async () => {
  server = await startServer({
    dispatcher: { ...fastDispatch, concurrencyPerRunner: CONCURRENCY },
    tiers: { pro: { active_workflows: 500, workflows_per_day: 5_000 } }
  })
})
afterAll(async () => { await server.close() })
afterEach(async () => { await Promise.all(fakes.splice(0).map((f) => f.close())) })

const fake = async () => {
  const f = await FakeComfyUI.start()
  fakes.push(f)
  return f
}

type User = Awaited<ReturnType<TestServer["user"]>>

let colour = 0
/** Each a different graph: ComfyUI caches the nodes of a graph it ran, and would not run it again. */
const create = (u: User, fields: Record<string, string> = {}) =>
  server.fetch("/v1/workflow", { method: "POST", headers: u.auth, body: workflowForm({ name: "run", ...fields }, smokeWorkflow({ color: colour++ % 256 })) })

const submit = async (u: User, fields: Record<string, string> = {}) => {
  const res = await create(u, fields)
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${await res.text()}`)
  return readJson<WorkflowSummaryJson>(res)
}

const get = async (u: User, id: string) => readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${id}`, { headers: u.auth }))

/** Waits until WES shows the workflow in one of `statuses`; fails at once when it ended otherwise. */
const untilStatus = (u: User, id: string, statuses: ReadonlyArray<string>) => {
  let last = ""
  return poll(() => `workflow ${id} to be ${statuses.join("|")} (is ${last})`, async () => {
    const w = await get(u, id)
    last = w.status
    if (!statuses.includes(w.status) && ["completed", "failed", "invalid", "cancelled"].includes(w.status)) {
      throw new Error(`workflow ${id} ended ${w.status}: ${w.exception_type}`)
    }
    return statuses.includes(w.status) ? w : undefined
  })
}

/** Waits until every workflow of `ids` completed. */
const waitAll = async (u: User, ids: ReadonlyArray<string>) => {
  for (const id of ids) await untilStatus(u, id, ["completed"])
}

/** The order prompts were posted to `f`, each checked to be posted exactly once. */
const postedOnce = (f: FakeComfyUI) => {
  const ids = f.submissions.filter((s) => s.status === 200).map((s) => s.prompt_id!)
  expect(new Set(ids).size).toBe(ids.length)
  return ids
}

describe("scheduling", () => {
  it("a priority is stored and shown; a bad one is a 400 naming the field, one above the tier a 403", async () => {
    const free = await server.user("free")
    const pro = await server.user("pro")
    const f = await fake()
    for (const u of [free, pro]) expect((await server.fetch("/v1/runner", json({ name: "r", endpoint: f.url }, u.auth))).status).toBe(201)
    const bad = await create(pro, { priority: "urgent" })
    expect(bad.status).toBe(400)
    expect((await readJson<ErrorBody>(bad)).message).toContain("priority")
    const over = await create(free, { priority: "high" })
    expect(over.status).toBe(403)
    expect((await readJson<ErrorBody>(over)).message).toBe("Priority limit exceeded: the free tier allows priorities up to normal")
    const low = await submit(free, { priority: "low" })
    expect((await get(free, low.id)).priority).toBe("low")
    expect((await get(free, (await submit(free)).id)).priority).toBe("normal")
    const rerun = await server.fetch(`/v1/workflow/${low.id}/rerun`, { method: "POST", headers: free.auth, body: new FormData() })
    expect(rerun.status).toBe(201)
    expect((await get(free, (await readJson<WorkflowSummaryJson>(rerun)).id)).priority).toBe("low")
  })

  it("on one runner, higher priorities go first; the runner holds at most its concurrency", async () => {
    const u = await server.user("pro")
    const f = await fake()
    f.hold()
    expect((await server.fetch("/v1/runner", json({ name: "r", endpoint: f.url }, u.auth))).status).toBe(201)
    const first = [await submit(u), await submit(u)]
    await until("the runner's slots filled", () => postedOnce(f).length === CONCURRENCY)
    const normal = await submit(u)
    const low = await submit(u, { priority: "low" })
    const high = await submit(u, { priority: "high" })
    // Nothing beyond the concurrency reaches the runner while it is busy.
    expect(postedOnce(f)).toHaveLength(CONCURRENCY)
    // Each waiting one knows how many start before it: the two on the runner, then the order.
    await untilStatus(u, first[0]!.id, ["running"])
    const positions = await Promise.all([first[1]!, high, normal, low].map(async (w) => (await get(u, w.id)).queue_position))
    expect(positions).toEqual([1, 2, 3, 4])
    // No run finished on this runner yet: no estimate of a start.
    expect((await get(u, low.id)).estimated_start_at).toBeNull()
    f.release()
    await waitAll(u, [...first, normal, low, high].map((w) => w.id))
    expect(postedOnce(f)).toEqual([...first.map((w) => w.id), high.id, normal.id, low.id])
  })

  it("on a shared managed runner, one user's burst delays another user's workflow by at most the runner's concurrency", async () => {
    const f = await fake()
    f.hold()
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
    const runner = await server.fetch("/admin/v1/managed-runners", json({ name: "shared", runner_type: "pro", endpoint: f.url, tags: ["shared"] }, admin))
    expect(runner.status).toBe(201)
    const [a, b] = [await server.user("pro"), await server.user("pro")]
    const burst: Array<WorkflowSummaryJson> = []
    for (let i = 0; i < 40; i++) burst.push(await submit(a, { tags: "shared" }))
    await until("the runner's slots filled", () => postedOnce(f).length === CONCURRENCY)
    const single = await submit(b, { tags: "shared" })
    f.release()
    await waitAll(b, [single.id])
    const posted = postedOnce(f)
    // Ahead of it: only what the burst already had on the runner.
    expect(posted.indexOf(single.id)).toBe(CONCURRENCY)
    await waitAll(a, burst.map((w) => w.id))
    expect(postedOnce(f)).toHaveLength(burst.length + 1)
    // Pro users of the other cases must not be sent to it once its fake is gone.
    const removed = await server.fetch(`/admin/v1/managed-runners/${(await readJson<{ id: string }>(runner)).id}`, { method: "DELETE", headers: admin })
    expect(removed.status).toBeLessThan(300)
  })

  it("a run that runs out of memory is retried once on another runner, keeping its id, with the attempt in the detail and the events", async () => {
    const u = await server.user("pro")
    const [small, big] = [await fake(), await fake()]
    small.hold()
    small.failNode({ exceptionType: "torch.OutOfMemoryError", exceptionMessage: "Allocation on device" })
    const first = await readJson<RunnerJson>(await server.fetch("/v1/runner", json({ name: "small", endpoint: small.url }, u.auth)))
    const w = await submit(u)
    const stream = server.fetch(`/v1/workflow/${w.id}/subscribe`, { headers: u.auth }).then((r) => r.text())
    await until("the prompt on the first runner", () => postedOnce(small).length === 1)
    const second = await readJson<RunnerJson>(await server.fetch("/v1/runner", json({ name: "big", endpoint: big.url }, u.auth)))
    small.release()
    await waitAll(u, [w.id])
    const detail = await get(u, w.id)
    expect(detail.user_runner_id).toBe(second.id)
    expect(detail.attempts).toMatchObject([{ runner_id: first.id, runner_kind: "user", exception_type: "torch.OutOfMemoryError", exception_message: "Allocation on device" }])
    expect([postedOnce(small), postedOnce(big)]).toEqual([[w.id], [w.id]])
    const events = await stream
    const types = events.split("\n").filter((l) => l.startsWith("event:")).map((l) => l.slice(6).trim())
    expect(types).toContain("retry")
    expect(types.indexOf("retry")).toBeLessThan(types.lastIndexOf("status"))
  })

  it("a run its runner lost (restarted) is retried on another runner; without another runner, it fails", async () => {
    const u = await server.user("pro")
    const [flaky, steady] = [await fake(), await fake()]
    flaky.hold()
    const first = await readJson<RunnerJson>(await server.fetch("/v1/runner", json({ name: "flaky", endpoint: flaky.url }, u.auth)))
    const w = await submit(u)
    await until("the prompt on the first runner", () => postedOnce(flaky).length === 1)
    await server.fetch("/v1/runner", json({ name: "steady", endpoint: steady.url }, u.auth))
    await untilStatus(u, w.id, ["running"])
    await flaky.restart()
    await waitAll(u, [w.id])
    const detail = await get(u, w.id)
    expect(detail.attempts).toMatchObject([{ runner_id: first.id, exception_type: "RunnerLost" }])
    expect([postedOnce(flaky), postedOnce(steady)]).toEqual([[w.id], [w.id]])
    // With no other runner, a loss is final.
    const alone = await server.user("pro")
    const only = await fake()
    only.hold()
    await server.fetch("/v1/runner", json({ name: "only", endpoint: only.url }, alone.auth))
    const v = await submit(alone)
    await untilStatus(alone, v.id, ["running"])
    await only.restart()
    const lost = await untilStatus(alone, v.id, ["failed"])
    expect([lost.exception_type, lost.attempts]).toEqual(["RunnerLost", []])
  })

  it("a waiting workflow's detail estimates its start from the runner's recent run times", async () => {
    const u = await server.user("pro")
    const f = await fake()
    expect((await server.fetch("/v1/runner", json({ name: "r", endpoint: f.url }, u.auth))).status).toBe(201)
    f.setExecutionDelay(100)
    await waitAll(u, [(await submit(u)).id])
    f.hold()
    const ws = [await submit(u), await submit(u), await submit(u)]
    await untilStatus(u, ws[0]!.id, ["running"])
    const before = Date.now()
    const last = await get(u, ws[2]!.id)
    expect(last.queue_position).toBe(2)
    expect(last.estimated_start_at).not.toBeNull()
    // Two runs of at least 100 ms each ahead of it.
    expect(Date.parse(last.estimated_start_at!)).toBeGreaterThanOrEqual(before + 200)
    const running = await get(u, ws[0]!.id)
    expect([running.queue_position, running.estimated_start_at]).toEqual([null, null])
    f.release()
    await waitAll(u, ws.map((w) => w.id))
  })
})
