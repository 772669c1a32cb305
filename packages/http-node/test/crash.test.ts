/**
 * Crash and pause (reliability suite 1): three `wes serve` instances on one PostgreSQL database
 * and 25 fake runners (one prompt at a time each, jobs of 1-5 s) take 500 workflows while one
 * instance is killed with SIGKILL and another is frozen with SIGSTOP for twice the lease, then
 * resumed. A checker reads the store and every fake's prompt log afterwards.
 *
 * Prints one `[crash]` line with its figures.
 */
import { slowWorkflow } from "@wes/runner-client/testing"
import { describe, expect, it } from "vitest"
import { checkRun, explainSubmissions, mapLimit, range, submitUntilAcknowledged, timedFetch } from "./chaos.js"
import {
  addRunner,
  createUser,
  type Instance,
  type LeaseRow,
  sleep,
  startInstance,
  type TestDatabase
} from "./instances.js"
import { poll } from "./polling.js"
import { processSuite } from "./process-suite.js"

const WORKFLOWS = 500
const RUNNERS = 25
const LEASE_MS = 3_000
/** The bound for orphaned work to be picked up by a survivor. */
const PICKUP_WITHIN_MS = 30_000

const suite = processSuite()

/** Runners whose live lease `instance` holds. */
const leasesOf = (rows: ReadonlyArray<LeaseRow>, instance: Instance) => rows.filter((r) => r.live && instance.owns(r.owner))

/** Waits until every runner in `runnerIds` is leased by an instance other than `gone` (or has nothing left to do); returns when. */
const awaitTakeover = (database: TestDatabase, gone: Instance, runnerIds: ReadonlyArray<string>, what: string) =>
  poll(what, async () => {
    const rows = await database.leases()
    const busy = await database.query((sql) =>
      sql<{ id: string }>`SELECT DISTINCT user_runner_id::text AS id FROM workflows WHERE status IN ('accepted', 'uploaded', 'queued', 'running')`
    )
    const open = new Set(busy.map((r) => r.id))
    const done = runnerIds.every((id) =>
      !open.has(id) || rows.some((r) => r.runner_id === id && r.live && !gone.owns(r.owner))
    )
    return done ? Date.now() : undefined
  }, PICKUP_WITHIN_MS, 50)

describe("crash and pause", () => {
  it("500 workflows over 3 instances: one killed with SIGKILL, one frozen for twice the lease; every acknowledged workflow completes exactly once, none is submitted twice", async () => {
    const database = await suite.database()
    const env = { WES_LEASE: `${LEASE_MS / 1000} seconds`, WES_TIER_LIMITS: JSON.stringify({ plus: { active_workflows: 2_000 } }) }
    const instances = await Promise.all(["A", "B", "C"].map((n) => startInstance(n, database.url(), env)))
    const fakes = await suite.fakes(RUNNERS)
    const user = await createUser(instances[0]!)
    for (const [i, f] of fakes.entries()) await addRunner(instances[i % 3]!, user, `r${i}`, f.url)

    // The client: a steady stream of creates spread over the instances it believes are up; a
    // create that gets no answer is retried on the next instance with the same Idempotency-Key.
    const down = new Set<Instance>()
    const acknowledged = new Set<string>()
    const started = Date.now()
    const submitting = mapLimit(range(WORKFLOWS), 6, async (i) => {
      const up = () => instances.filter((x) => !down.has(x))
      const w = await submitUntilAcknowledged((attempt) => {
        const candidates = up()
        return candidates[(i + attempt) % candidates.length]!
      }, user, slowWorkflow({ seconds: 1 + (i % 5), steps: 2, prefix: `crash/${i}` }), `crash-${i}`)
      acknowledged.add(w.id)
      return w
    })

    // kill -9 the instance driving the most runners, mid-run.
    await poll("120 workflows to be acknowledged", () => (acknowledged.size >= 120 ? true : undefined), 120_000, 50)
    const before = await database.leases()
    const victim = [...instances].sort((a, b) => leasesOf(before, b).length - leasesOf(before, a).length)[0]!
    const victimRunners = leasesOf(before, victim).map((r) => r.runner_id)
    const statusesAtKill = await database.statusCounts()
    down.add(victim)
    victim.child.kill("SIGKILL")
    const killedAt = Date.now()
    await victim.exited
    const takenOverAt = await awaitTakeover(database, victim, victimRunners, "a survivor to take the killed instance's runners over")

    // SIGSTOP the survivor driving the most runners for twice the lease, then SIGCONT.
    await poll("300 workflows to be acknowledged", () => (acknowledged.size >= 300 ? true : undefined), 120_000, 50)
    const survivors = instances.filter((x) => x !== victim)
    const beforePause = await database.leases()
    const paused = [...survivors].sort((a, b) => leasesOf(beforePause, b).length - leasesOf(beforePause, a).length)[0]!
    const other = survivors.find((x) => x !== paused)!
    const pausedRunners = leasesOf(beforePause, paused).map((r) => r.runner_id)
    down.add(paused)
    paused.child.kill("SIGSTOP")
    const pausedAt = Date.now()
    const pausedTakeoverAt = await awaitTakeover(database, paused, pausedRunners, "the other survivor to take the frozen instance's runners over")
    // real time: the frozen process must stay frozen for twice its lease, whatever happened meanwhile.
    await sleep(Math.max(0, 2 * LEASE_MS - (Date.now() - pausedAt)))
    paused.child.kill("SIGCONT")
    const resumedAt = Date.now()
    down.delete(paused)

    const created = await submitting
    const createdIn = Date.now() - started
    expect(new Set(created.map((w) => w.id)).size).toBe(WORKFLOWS)
    expect(acknowledged.size).toBe(WORKFLOWS)
    let last: Record<string, number> = {}
    await poll(() => `every workflow to complete; by status: ${JSON.stringify(last)}`, async () => {
      last = await database.statusCounts()
      return last["completed"] === WORKFLOWS ? true : undefined
    }, 180_000, 250)
    const wall = Date.now() - started

    const check = await checkRun(database, acknowledged, fakes)
    expect(check.missing).toEqual([])
    expect(check.stored).toHaveLength(WORKFLOWS)
    expect(check.stored.filter((w) => w.status !== "completed").map((w) => `${w.id}:${w.status}:${w.exception_type}`)).toEqual([])
    expect(check.unfinished).toEqual([])
    expect(check.endedOtherThanOnce).toEqual([])
    if (check.counts.duplicates.length > 0) console.log(`[crash] duplicates:\n${await explainSubmissions(database, check.counts.duplicates, fakes)}`)
    expect(check.counts.duplicates).toEqual([])
    expect(check.counts.unique).toBe(WORKFLOWS)
    expect(check.counts.total).toBe(WORKFLOWS)
    // The frozen instance came back and serves again; the killed one stayed dead.
    expect(paused.child.exitCode).toBeNull()
    expect((await timedFetch(paused.base, "/v1/user", { headers: user.auth })).status).toBe(200)
    expect(other.child.exitCode).toBeNull()

    const progressed = await database.query((sql) =>
      sql<{ n: number }>`SELECT count(DISTINCT workflow_id)::int AS n FROM workflow_events WHERE type = 'progress'`
    )
    console.log(
      `[crash] workflows=${WORKFLOWS} runners=${RUNNERS} instances=3 lease_ms=${LEASE_MS} wall_ms=${wall} creating_ms=${createdIn} ` +
        `| kill -9 ${victim.name} at_ms=${killedAt - started} runners_owned=${victimRunners.length} statuses=${JSON.stringify(statusesAtKill)} ` +
        `takeover_ms=${takenOverAt - killedAt} | SIGSTOP ${paused.name} at_ms=${pausedAt - started} runners_owned=${pausedRunners.length} ` +
        `takeover_while_frozen_ms=${pausedTakeoverAt - pausedAt} frozen_ms=${resumedAt - pausedAt} ` +
        `| completed=${check.stored.length} prompts_received=${check.counts.total} unique=${check.counts.unique} ` +
        `duplicates=${check.counts.duplicates.length} workflows_with_progress=${progressed[0]!.n} ` +
        `logged_problems=${JSON.stringify(Object.fromEntries(survivors.map((s) => [s.name, s.problems()])))}`
    )
  }, 300_000)
})
