/**
 * Runner faults at scale (reliability suite 2): 200 workflows over 4 fake runners in one run,
 * each runner driven into a different fault while it works, and every workflow checked against
 * the end state design.md gives for that fault:
 *
 * | runner | fault                                   | end state                                       |
 * |--------|-----------------------------------------|-------------------------------------------------|
 * | r0     | WebSocket dropped every second          | completed                                       |
 * | r1     | WebSocket open but silent               | completed (the watchdog reconnects)             |
 * | r2     | restarted: queue and history lost       | what it held: failed RunnerLost; rest completed |
 * | r3     | answers every request 500 ms late       | completed                                       |
 * | r0     | then answers 500 to everything          | moved to r3, completed                          |
 * | r1     | then refuses connections                | moved to r3, completed; if r1 was the only      |
 * |        |                                         | eligible runner: failed RunnerUnavailable       |
 *
 * Prints one `[runner-faults]` line with its figures.
 */
import { FakeComfyUI, slowWorkflow } from "@wes/runner-client/testing"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { mapLimit, range } from "./chaos.js"
import { fastDispatch, json, readJson, type RunnerJson, startServer, type TestServer, type WorkflowDetailJson, workflowForm, type WorkflowSummaryJson } from "./harness.js"
import { countSubmissions, sleep, TERMINAL } from "./instances.js"
import { poll } from "./polling.js"

let server: TestServer
const fakes: Array<FakeComfyUI> = []

beforeAll(async () => {
  // A deep queue on each runner (every workflow of a stage on it at once): what a restart loses.
  server = await startServer({ dispatcher: { ...fastDispatch, concurrencyPerRunner: 64 }, tiers: { pro: { active_workflows: 500 } } })
})
afterAll(async () => {
  await Promise.all(fakes.splice(0).map((f) => f.close()))
  await server.close()
})

type User = Awaited<ReturnType<TestServer["user"]>>

const submit = async (u: User, i: number, tags: string) => {
  const res = await server.fetch("/v1/workflow", {
    method: "POST",
    headers: u.auth,
    body: workflowForm({ name: `faults-${i}`, tags }, slowWorkflow({ seconds: 0.2 + (i % 3) * 0.1, steps: 2, prefix: `faults/${i}` }))
  })
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${await res.text()}`)
  return (await readJson<WorkflowSummaryJson>(res)).id
}

const details = (u: User, ids: ReadonlyArray<string>) =>
  mapLimit(ids, 16, async (id) => readJson<WorkflowDetailJson>(await server.fetch(`/v1/workflow/${id}`, { headers: u.auth })))

/** Waits until every workflow of `ids` is terminal; returns their details. */
const awaitTerminal = async (u: User, ids: ReadonlyArray<string>, what: string, timeoutMs = 90_000) => {
  let open: Array<string> = []
  return poll(() => `${what}: still open ${open.slice(0, 10).join(", ")}`, async () => {
    const all = await details(u, ids)
    open = all.filter((w) => !TERMINAL.includes(w.status)).map((w) => `${w.id}:${w.status}`)
    return open.length === 0 ? all : undefined
  }, timeoutMs, 200)
}

const completedIn = async (u: User, ids: ReadonlyArray<string>) => (await details(u, ids)).filter((w) => w.status === "completed").length

describe("runner faults at scale", () => {
  it("200 workflows over 4 runners through dropped and silent WebSockets, a restart, slow and failing answers and refused connections end in the states the design gives", async () => {
    const u = await server.user("pro")
    fakes.push(...await Promise.all(range(4).map(() => FakeComfyUI.start({ cache: false }))))
    const [f0, f1, f2, f3] = fakes as [FakeComfyUI, FakeComfyUI, FakeComfyUI, FakeComfyUI]
    const tags = [["r0", "a"], ["r1", "b"], ["r2"], ["r3", "a", "b"]]
    const runners: Array<RunnerJson> = []
    for (const [i, f] of fakes.entries()) {
      const res = await server.fetch("/v1/runner", json({ name: `r${i}`, endpoint: f.url, tags: tags[i] }, u.auth))
      expect(res.status).toBe(201)
      runners.push(await readJson<RunnerJson>(res))
    }
    const started = Date.now()

    // Stage 1: 35 workflows pinned to each runner, each runner in its own fault.
    f3.slowHttp(500)
    const groups = await Promise.all(range(4).map((r) => mapLimit(range(35), 4, (i) => submit(u, r * 100 + i, `r${r}`))))
    const [g0, g1, g2, g3] = groups as [Array<string>, Array<string>, Array<string>, Array<string>]

    const dropping = (async () => {
      let drops = 0
      while ((await completedIn(u, g0)) < g0.length && drops < 20) {
        // real time: the fault's schedule, a dropped WebSocket every second while r0 works.
        await sleep(1_000)
        f0.dropWebSockets()
        drops++
      }
      return drops
    })()

    const silencing = (async () => {
      await poll("3 workflows to complete on r1", async () => ((await completedIn(u, g1)) >= 3 ? true : undefined), 90_000, 100)
      const connectionsBefore = f1.wsConnections.length
      f1.silenceWebSockets()
      const silencedAt = Date.now()
      await poll("the watchdog to open a new WebSocket to the silent runner", () =>
        f1.wsConnections.length > connectionsBefore ? true : undefined, 30_000, 20)
      return Date.now() - silencedAt
    })()

    const restarting = (async () => {
      await poll("5 workflows to complete on r2", async () => ((await completedIn(u, g2)) >= 5 ? true : undefined), 90_000, 100)
      f2.hold()
      f2.pauseQueue()
      // Everything submitted and every finished prompt recorded: what the runner holds now is exactly what the restart loses.
      await poll("every r2 workflow to be submitted and every finished one recorded", async () => {
        if (f2.submissions.filter((s) => s.status === 200).length < g2.length) return undefined
        const finished = new Set(f2.state.history)
        const all = await details(u, g2)
        return all.every((w) => !finished.has(w.id) || w.status === "completed") ? true : undefined
      }, 90_000, 100)
      const lost = [...(f2.state.running === null ? [] : [f2.state.running]), ...f2.state.pending]
      await f2.restart()
      f2.release()
      f2.resumeQueue()
      return lost
    })()

    const [drops, watchdogMs, lost] = await Promise.all([dropping, silencing, restarting])
    const stage1 = await awaitTerminal(u, [...g0, ...g1, ...g2, ...g3], "stage 1 to end")
    f3.restoreHttp()
    const stage1Ms = Date.now() - started

    // Stage 2: r0 answers 500, r1 refuses connections; "a" may run on r0 or r3, "b" on r1 or r3, "r1" only on r1.
    f0.failHttp(500)
    await f1.refuseConnections()
    const stage2Start = Date.now()
    const [viaA, viaB, onlyR1] = await Promise.all([
      mapLimit(range(25), 4, (i) => submit(u, 500 + i, "a")),
      mapLimit(range(25), 4, (i) => submit(u, 600 + i, "b")),
      mapLimit(range(10), 4, (i) => submit(u, 700 + i, "r1"))
    ])
    const stage2 = await awaitTerminal(u, [...viaA, ...viaB, ...onlyR1], "stage 2 to end")
    const stage2Ms = Date.now() - stage2Start

    // Exact end states.
    const byId = new Map([...stage1, ...stage2].map((w) => [w.id, w]))
    const state = (id: string) => {
      const w = byId.get(id)!
      return w.status === "completed" ? "completed" : `${w.status}:${w.exception_type}`
    }
    const lostSet = new Set(lost)
    expect(lost.length).toBeGreaterThan(0)
    expect(lost.every((id) => g2.includes(id))).toBe(true)
    const expected = new Map<string, string>()
    for (const id of [...g0, ...g1, ...g3, ...viaA, ...viaB]) expected.set(id, "completed")
    for (const id of g2) expected.set(id, lostSet.has(id) ? "failed:RunnerLost" : "completed")
    for (const id of onlyR1) expected.set(id, "failed:RunnerUnavailable")
    const actual = new Map([...expected.keys()].map((id) => [id, state(id)]))
    expect(actual).toEqual(expected)
    expect(actual.size).toBe(200)
    // Stage 2's work ran on r3, the one healthy eligible runner.
    expect([...viaA, ...viaB].filter((id) => byId.get(id)!.user_runner_id !== runners[3]!.id)).toEqual([])

    // No prompt id was accepted by a runner twice; each completed workflow was received exactly once, the unavailable ones never.
    const accepted = fakes.flatMap((f) => f.submissions.filter((s) => s.status === 200))
    const counts = countSubmissions(accepted)
    expect(counts.duplicates).toEqual([])
    const received = new Set(accepted.map((s) => s.prompt_id))
    expect([...expected].filter(([id, s]) => s !== "failed:RunnerUnavailable" && !received.has(id))).toEqual([])
    expect(onlyR1.filter((id) => received.has(id))).toEqual([])
    expect(lost.every((id) => f2.submissions.filter((s) => s.prompt_id === id).length === 1)).toBe(true)

    const tally = (ids: ReadonlyArray<string>) => {
      const t: Record<string, number> = {}
      for (const id of ids) t[state(id)] = (t[state(id)] ?? 0) + 1
      return JSON.stringify(t)
    }
    console.log(
      `[runner-faults] workflows=${actual.size} runners=4 stage1_ms=${stage1Ms} stage2_ms=${stage2Ms} ` +
        `| ws-drop r0: drops=${drops} ${tally(g0)} | ws-silent r1: watchdog_reconnect_ms=${watchdogMs} ${tally(g1)} ` +
        `| restart r2: lost=${lost.length} ${tally(g2)} | slow r3 (500 ms): ${tally(g3)} ` +
        `| 500 r0 -> r3: ${tally(viaA)} | refused r1 -> r3: ${tally(viaB)} | refused, r1 only: ${tally(onlyR1)} ` +
        `| prompts_accepted=${counts.total} unique=${counts.unique} duplicates=${counts.duplicates.length}`
    )
  }, 240_000)
})
