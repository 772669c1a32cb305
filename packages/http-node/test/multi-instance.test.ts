/**
 * Several `wes serve` processes on one PostgreSQL database work as one system (issue 5): work
 * created through any instance runs exactly once on the (fake) runners, an instance killed with
 * SIGKILL mid-flight loses nothing, SSE clients follow workflows driven by another instance, and
 * the whole server restarted mid-flight resumes without submitting anything twice.
 *
 * Each test prints one `[issue5:...]` line with its figures.
 */
import { type FakeComfyUI, saveImageWorkflow, slowWorkflow } from "@wes/runner-client/testing"
import { describe, expect, it } from "vitest"
import { mapLimit, range } from "./chaos.js"
import { readJson, type RunnerJson, type WorkflowDetailJson } from "./harness.js"
import {
  addRunner,
  countSubmissions,
  createUser,
  createWorkflow,
  type Instance,
  type LeaseRow,
  type SseEvent,
  startInstance,
  subscribe,
  TERMINAL,
  type TestDatabase,
  type TestUser,
  watchLeases
} from "./instances.js"
import { poll, within } from "./polling.js"
import { processSuite } from "./process-suite.js"

/** Its fake runners have no cross-prompt cache (the suite's default): every FakeSleep really takes its time. */
const suite = processSuite()

/** Waits until `total` workflows completed; fails at once when one ends otherwise. Returns when it saw them all. */
const awaitAllCompleted = async (database: TestDatabase, total: number, timeoutMs: number): Promise<number> => {
  let last: Record<string, number> = {}
  await poll(() => `all ${total} workflows to complete; by status: ${JSON.stringify(last)}`, async () => {
    last = await database.statusCounts()
    const terminal = TERMINAL.reduce((n, s) => n + (last[s] ?? 0), 0)
    if (terminal > (last["completed"] ?? 0)) throw new Error(`workflows ended otherwise than completed: ${JSON.stringify(last)}`)
    return (last["completed"] ?? 0) === total ? true : undefined
  }, timeoutMs, 100)
  return Date.now()
}

/** Reads every workflow through `instance`: all completed. */
const expectCompletedViaApi = async (instance: Instance, user: TestUser, ids: ReadonlyArray<string>) => {
  const statuses = await mapLimit(ids, 8, async (id) => {
    const res = await instance.fetch(`/v1/workflow/${id}`, { headers: user.auth })
    return `${id}:${(await readJson<WorkflowDetailJson>(res)).status}`
  })
  expect(statuses.filter((s) => !s.endsWith(":completed"))).toEqual([])
}

/** How long after the runner finished a prompt its completion was recorded: "avg:N,max:N" (ms). */
const completionLag = async (database: TestDatabase) => {
  const [row] = await database.query((sql) =>
    sql<{ avg: number; max: number }>`SELECT avg(ms)::float8 AS avg, max(ms)::float8 AS max FROM (
      SELECT extract(epoch FROM e.created_at - w.completed_at) * 1000 AS ms FROM workflows w
      JOIN workflow_events e ON e.workflow_id = w.id AND e.type = 'status' AND e.data->>'status' = 'completed') t`
  )
  return `avg:${Math.round(row!.avg)},max:${Math.round(row!.max)}`
}

/** Prompt ids waiting or running on a fake. */
const inFlightOn = (f: FakeComfyUI) => [...(f.state.running === null ? [] : [f.state.running]), ...f.state.pending]

const statusesOf = (events: ReadonlyArray<SseEvent>) => events.filter((e) => e.event === "status").map((e) => e.data["status"])

describe("several wes serve instances on one database", () => {
  it("two instances, 200 workflows over 4 runners: every workflow completes and every prompt reaches a runner exactly once", async () => {
    const database = await suite.database()
    const [a, b] = await Promise.all([startInstance("A", database.url()), startInstance("B", database.url())])
    const runnerFakes = await suite.fakes(4)
    const user = await createUser(a)
    for (const [i, f] of runnerFakes.entries()) await addRunner(i % 2 === 0 ? a : b, user, `r${i}`, f.url)
    const leases = watchLeases(database)

    const started = Date.now()
    const instances = [a, b]
    const created = await mapLimit(range(200), 8, (i) => createWorkflow(instances[i % 2]!, user, saveImageWorkflow({ prefix: `multi/${i}` })))
    const createdIn = Date.now() - started
    const wall = (await awaitAllCompleted(database, 200, 90_000)) - started
    await leases.stop()

    // Read back through the instance that did NOT create each workflow.
    await expectCompletedViaApi(b, user, created.filter((_, i) => i % 2 === 0).map((w) => w.id))
    await expectCompletedViaApi(a, user, created.filter((_, i) => i % 2 === 1).map((w) => w.id))

    const all = runnerFakes.flatMap((f) => f.submissions)
    const counts = countSubmissions(all)
    const ids = new Set(created.map((w) => w.id))
    expect(counts.duplicates).toEqual([])
    expect(counts.total).toBe(200)
    expect(counts.unique).toBe(200)
    expect(all.filter((s) => s.prompt_id === null || !ids.has(s.prompt_id) || s.status !== 200)).toEqual([])

    const perRunner = runnerFakes.map((f) => f.submissions.length)
    const submittedBy = { A: 0, B: 0, unknown: 0 }
    for (const s of all) {
      const owner = leases.ownerOf(s.client_id)
      if (owner !== undefined && a.owns(owner)) submittedBy.A++
      else if (owner !== undefined && b.owns(owner)) submittedBy.B++
      else submittedBy.unknown++
    }
    console.log(
      `[issue5:two-instances] workflows=200 created_via=A:100,B:100 completed=200 prompts_received=${counts.total} ` +
        `unique=${counts.unique} duplicates=${counts.duplicates.length} wall_ms=${wall} (creating_ms=${createdIn}) ` +
        `per_runner=${perRunner.join("/")} submitted_by=A:${submittedBy.A},B:${submittedBy.B},unattributed:${submittedBy.unknown} ` +
        `completion_recorded_after_runner_ms=${await completionLag(database)} ` +
        `logged_problems=A:${JSON.stringify(a.problems())},B:${JSON.stringify(b.problems())}`
    )
  }, 180_000)

  it("an instance killed with SIGKILL mid-flight: the survivor finishes all of its work, nothing is submitted twice", async () => {
    const database = await suite.database()
    const [a, b] = await Promise.all([startInstance("A", database.url()), startInstance("B", database.url())])
    const runnerFakes = await suite.fakes(4)
    const user = await createUser(a)
    const runners: Array<RunnerJson> = []
    for (const [i, f] of runnerFakes.entries()) runners.push(await addRunner(i % 2 === 0 ? a : b, user, `r${i}`, f.url, ["pool", `r${i}`]))
    const leases = watchLeases(database)

    // 60 jobs of 0.4 s over 4 runners, all submitted before the runners start on them: each
    // runner has seconds of work queued on it, whatever the speed of this machine.
    for (const f of runnerFakes) f.pauseQueue()
    const bulk = await mapLimit(range(60), 6, (i) =>
      createWorkflow(i % 2 === 0 ? a : b, user, slowWorkflow({ seconds: 0.4, steps: 4, prefix: `kill/${i}` }), { tags: "pool" }))
    let seen = ""
    const driven = await poll(() => `every runner to be driven and every prompt queued; ${seen}`, async () => {
      const rows = (await database.leases()).filter((r) => r.live)
      const pending = runnerFakes.map((f) => f.state.pending.length)
      seen = `live leases: ${rows.length}, pending: ${pending.join("/")}, statuses: ${JSON.stringify(await database.statusCounts())}`
      return rows.length === 4 && pending.reduce((x, y) => x + y, 0) === bulk.length ? rows : undefined
    }, 30_000, 50)
    for (const f of runnerFakes) f.resumeQueue()
    await poll("every runner to finish a prompt", () => (runnerFakes.every((f) => f.state.history.length > 0) ? true : undefined), 10_000, 20)
    // The victim: the instance whose runners have the most prompts waiting.
    const pendingOf = (owner: Instance) =>
      driven.filter((r) => owner.owns(r.owner)).reduce((n, r) => n + runnerFakes[runners.findIndex((x) => x.id === r.runner_id)]!.state.pending.length, 0)
    const victim = pendingOf(a) >= pendingOf(b) ? a : b
    const survivor = victim === a ? b : a
    const victimRunners = driven.filter((r) => victim.owns(r.owner))
    const slowIndex = runners.findIndex((r) => r.id === victimRunners[0]!.runner_id)
    const slowFake = runnerFakes[slowIndex]!

    // Catch the victim in the middle of submissions: its runner answers slowly, and new work
    // for that runner (created through the survivor) is claimed by the victim.
    slowFake.slowHttp(1_500)
    const extra = await mapLimit(range(4), 4, (i) =>
      createWorkflow(survivor, user, slowWorkflow({ seconds: 0.4, steps: 4, prefix: `kill/extra${i}` }), { tags: `r${slowIndex}` }))
    const victimOwner = victimRunners[0]!.owner
    const claimsAtKill = await poll("the victim to hold claims", async () => {
      const n = (await database.liveClaims())[victimOwner] ?? 0
      return n > 0 ? n : undefined
    }, 10_000, 20)
    const victimLeases = (await database.leases()).filter((r) => r.live && r.owner === victimOwner)
    const queuedAtKill = victimLeases.flatMap((l) => inFlightOn(runnerFakes[runners.findIndex((r) => r.id === l.runner_id)]!))
    const counts = await database.statusCounts()

    victim.child.kill("SIGKILL")
    const killedAt = Date.now()
    await victim.exited
    slowFake.restoreHttp()

    expect(victimLeases.length).toBeGreaterThan(0)
    expect(claimsAtKill).toBeGreaterThan(0)
    expect(queuedAtKill.length).toBeGreaterThan(0)

    // The survivor takes the victim's runners over (new lease epochs) ...
    const takeover = await poll("the survivor to take the victim's runners over", async () => {
      const rows = await database.leases()
      return victimLeases.every((l) => rows.some((r: LeaseRow) => r.runner_id === l.runner_id && r.live && survivor.owns(r.owner)))
        ? Date.now()
        : undefined
    }, 30_000, 50)
    // ... and finishes everything.
    const total = bulk.length + extra.length
    const doneAt = await awaitAllCompleted(database, total, 60_000)
    await leases.stop()
    await expectCompletedViaApi(survivor, user, [...bulk, ...extra].map((w) => w.id))

    const all = runnerFakes.flatMap((f) => f.submissions)
    const sub = countSubmissions(all)
    // Submissions the victim sent that the slow runner only handled after the kill: found there by the survivor.
    const landedAfterKill = slowFake.submissions.filter((s) => s.at > killedAt && leases.ownerOf(s.client_id) === victimOwner).length
    const lastCompleted = await database.query((sql) =>
      sql<{ ms: number }>`SELECT (extract(epoch FROM max(completed_at)) * 1000)::float8 AS ms FROM workflows`
    )
    console.log(
      `[issue5:kill-9] workflows=${total} killed=${victim.name} at_kill: runners_owned=${victimLeases.length} live_claims=${claimsAtKill} ` +
        `prompts_queued_on_its_runners=${queuedAtKill.length} statuses=${JSON.stringify(counts)} | takeover_after_ms=${takeover - killedAt} ` +
        `all_completed_seen_after_ms=${doneAt - killedAt} last_completed_at_after_ms=${Math.round(lastCompleted[0]!.ms - killedAt)} ` +
        `prompts_received=${sub.total} unique=${sub.unique} duplicates=${sub.duplicates.length} victim_prompts_landed_after_kill=${landedAfterKill} ` +
        `completion_recorded_after_runner_ms=${await completionLag(database)} ` +
        `per_runner=${runnerFakes.map((f) => f.submissions.length).join("/")} survivor_logged_problems=${JSON.stringify(survivor.problems())}`
    )
    expect(sub.duplicates).toEqual([])
    expect(sub.unique).toBe(total)
    expect(sub.total).toBe(total)
    // The survivor kept serving throughout.
    expect(survivor.child.exitCode).toBeNull()
  }, 180_000)

  it("SSE across instances: a client of one instance follows a workflow created and driven by the other, and replays from Last-Event-ID", async () => {
    const database = await suite.database()
    const [a, b] = await Promise.all([startInstance("A", database.url()), startInstance("B", database.url())])
    const [f] = await suite.fakes(1)
    const user = await createUser(a)
    const runner = await addRunner(a, user, "r", f!.url)

    // A first workflow: whichever instance takes the runner keeps driving it (idle drivers stay 30 s).
    await createWorkflow(a, user, saveImageWorkflow())
    await poll("the warm-up workflow to complete", async () => ((await database.statusCounts())["completed"] === 1 ? true : undefined), 20_000, 100)
    const lease = (await database.leases()).find((l) => l.runner_id === runner.id && l.live)!
    const driver = a.owns(lease.owner) ? a : b
    const other = driver === a ? b : a

    // Created through the driver; followed on the other instance. Nodes wait on the runner
    // until released, so the stream is caught up while the workflow is still running.
    f!.hold()
    const w = await createWorkflow(driver, user, slowWorkflow({ seconds: 0.6, steps: 3, prefix: "sse/run" }))
    const live = await subscribe(other, user, w.id, "0")
    await live.until("the running status on the other instance", (e) => e.event === "status" && e.data["status"] === "running")
    // Replay from the middle, on the other instance too: from the `queued` status event.
    const queued = live.events.find((e) => e.event === "status" && e.data["status"] === "queued")!
    const replay = await subscribe(other, user, w.id, queued.id)
    // And the same stream on the driver, for comparison.
    const onDriver = await subscribe(driver, user, w.id, "0")
    await replay.until("the replay to reach the running status", (e) => e.event === "status" && e.data["status"] === "running")
    const releasedAt = Date.now()
    f!.release()

    const streams = Promise.all([live.ended, replay.ended, onDriver.ended])
    const [events, replayed, driverEvents] = await within(
      () => `the event streams to end; on ${other.name}: ${JSON.stringify(live.events.map((e) => [e.id, e.event]))}`,
      streams,
      30_000
    )
    const [current, ...sequence] = events
    expect(current).toMatchObject({ id: "0", event: "status" })
    expect(sequence.map((e) => Number(e.id))).toEqual(sequence.map((_, i) => i + 1))
    expect(statusesOf(sequence)).toEqual(["accepted", "uploaded", "queued", "running", "completed"])
    expect(sequence.filter((e) => e.event === "progress").map((e) => [e.data["value"], e.data["max"]])).toEqual([[1, 3], [2, 3], [3, 3]])
    expect(sequence.filter((e) => e.event === "output")).toHaveLength(1)
    const last = sequence.at(-1)!
    expect(last).toMatchObject({ event: "done", data: { status: "completed" } })
    // Everything after the release reached the other instance live (NOTIFY from the driver).
    const afterRelease = sequence.slice(sequence.findIndex((e) => e.event === "status" && e.data["status"] === "running") + 1)
    expect(afterRelease.map((e) => e.event)).toEqual(expect.arrayContaining(["progress", "output", "status", "done"]))

    // The replay: the current status under the given id, then exactly the events after it.
    const [replayHead, ...replayTail] = replayed
    expect(replayHead).toMatchObject({ id: queued.id, event: "status", data: { status: "running" } })
    const expectedTail = sequence.filter((e) => Number(e.id) > Number(queued.id))
    expect(replayTail.map((e) => [e.id, e.event, e.data])).toEqual(expectedTail.map((e) => [e.id, e.event, e.data]))
    // The driver's own stream is the same sequence.
    expect(driverEvents.slice(1).map((e) => [e.id, e.event, e.data])).toEqual(sequence.map((e) => [e.id, e.event, e.data]))

    // The driver still held the runner: the events after the release were published by it.
    const stillDriver = (await database.leases()).find((l) => l.runner_id === runner.id && l.live)
    expect(stillDriver?.owner).toBe(lease.owner)
    console.log(
      `[issue5:sse] created_and_driven_by=${driver.name} followed_on=${other.name} events=${sequence.length} ` +
        `statuses=${statusesOf(sequence).join(">")} replay_from=${queued.id} replayed=${replayTail.length} ` +
        `release_to_done_ms=${Date.now() - releasedAt}`
    )
  }, 120_000)

  it("the whole server restarted mid-flight (SIGTERM, then a new instance): all work completes, prompts queued on the runners are reconciled, not resubmitted", async () => {
    const database = await suite.database()
    const first = await startInstance("first", database.url())
    const runnerFakes = await suite.fakes(2)
    const user = await createUser(first)
    for (const [i, f] of runnerFakes.entries()) await addRunner(first, user, `r${i}`, f.url)

    // Everything submitted before the runners start, so that work is queued whatever the speed of this machine.
    for (const f of runnerFakes) f.pauseQueue()
    const created = await mapLimit(range(50), 6, (i) => createWorkflow(first, user, slowWorkflow({ seconds: 0.2, steps: 2, prefix: `restart/${i}` })))
    await poll("every prompt to be queued on the runners", () =>
      runnerFakes.reduce((n, f) => n + f.state.pending.length, 0) === created.length ? true : undefined, 30_000, 20)
    for (const f of runnerFakes) f.resumeQueue()
    // Work done, running and queued on both runners.
    await poll("both runners to have run some prompts", () => (runnerFakes.every((f) => f.state.history.length > 1) ? true : undefined), 30_000, 20)

    // The runners stop taking new prompts while the server restarts (a prompt running now
    // finishes meanwhile): what was queued must still be found there afterwards.
    for (const f of runnerFakes) f.pauseQueue()
    const stopping = Date.now()
    first.child.kill("SIGTERM")
    const code = await first.exited
    const stoppedIn = Date.now() - stopping
    expect(code).toBe(0)
    const counts = await database.statusCounts()
    const queuedOnRunners = runnerFakes.flatMap(inFlightOn)
    const submittedBefore = runnerFakes.reduce((n, f) => n + f.submissions.length, 0)
    expect(queuedOnRunners.length).toBeGreaterThan(0)

    const second = await startInstance("second", database.url())
    const restartedIn = Date.now() - stopping
    for (const f of runnerFakes) f.resumeQueue()
    const doneAt = await awaitAllCompleted(database, 50, 60_000)
    await expectCompletedViaApi(second, user, created.map((w) => w.id))

    const sub = countSubmissions(runnerFakes.flatMap((f) => f.submissions))
    // Prompts submitted before the restart run under the old WebSocket client id: the new
    // instance gets none of their targeted messages (progress), only what reconciliation reads.
    const withProgress = await database.query((sql) =>
      sql<{ n: number }>`SELECT count(DISTINCT workflow_id)::int AS n FROM workflow_events WHERE type = 'progress'`
    )
    const lag = await completionLag(database)
    console.log(
      `[issue5:restart] workflows=50 at_sigterm: statuses=${JSON.stringify(counts)} prompts_queued_on_runners=${queuedOnRunners.length} ` +
        `submitted_before=${submittedBefore} | stop_ms=${stoppedIn} back_after_ms=${restartedIn} all_completed_after_ms=${doneAt - stopping} ` +
        `prompts_received=${sub.total} unique=${sub.unique} duplicates=${sub.duplicates.length} ` +
        `workflows_with_progress_events=${withProgress[0]!.n} completion_recorded_after_runner_ms=${lag} ` +
        `logged_problems=first:${JSON.stringify(first.problems())},second:${JSON.stringify(second.problems())}`
    )
    expect(sub.duplicates).toEqual([])
    expect(sub.total).toBe(50)
    expect(sub.unique).toBe(50)
  }, 180_000)
})
