/**
 * Database faults (reliability suite 3): the machine's real PostgreSQL server is restarted
 * (`pg_ctlcluster ... restart`) under load while clients keep creating and reading workflows.
 * Requests during the outage fail fast with the contract's 503, the server recovers by itself
 * (same process), and nothing acknowledged with 201 is lost. Serial phase only: restarting the
 * shared server breaks whatever else uses it; the test waits until it accepts connections again.
 *
 * Prints one `[db-restart]` line with its figures.
 */
import { slowWorkflow } from "@wes/runner-client/testing"
import { describe, expect, it } from "vitest"
import { type Answer, checkRun, isContract503, restartPostgres, timedFetch } from "./chaos.js"
import { workflowForm, type WorkflowSummaryJson } from "./harness.js"
import { addRunner, createUser, sleep, startInstance } from "./instances.js"
import { poll } from "./polling.js"
import { processSuite } from "./process-suite.js"

/** Generous bound for any one answer while the database is gone (the pool's connect timeout is 5 s). */
const ANSWER_WITHIN_MS = 10_000
/** How long the server may take to serve again once PostgreSQL is back, without being restarted. */
const RECOVER_WITHIN_MS = 30_000

const suite = processSuite({ waitForPostgres: true })

interface Seen extends Answer {
  readonly what: string
  readonly at: number
}

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0

describe("database faults", () => {
  it("PostgreSQL restarted under load: 503 fast while it is down, recovery without a restart, nothing acknowledged lost", async () => {
    const database = await suite.database()
    const wes = await startInstance("W", database.url(), { WES_TIER_LIMITS: JSON.stringify({ plus: { active_workflows: 2_000 } }) })
    const fakes = await suite.fakes(4)
    const user = await createUser(wes)
    for (const [i, f] of fakes.entries()) await addRunner(wes, user, `r${i}`, f.url)

    const seen: Array<Seen> = []
    const acknowledged = new Set<string>()
    let n = 0
    let stop = false
    const request = async (what: string, path: string, init: RequestInit = {}) => {
      const answer = await timedFetch(wes.base, path, init)
      seen.push({ ...answer, what, at: Date.now() })
      return answer
    }
    const creator = async () => {
      while (!stop) {
        const i = n++
        const answer = await request("POST /v1/workflow", "/v1/workflow", {
          method: "POST",
          headers: { ...user.auth, "idempotency-key": `restart-${i}` },
          body: workflowForm({ name: `restart-${i}` }, slowWorkflow({ seconds: 0.2 + (i % 4) * 0.1, steps: 2, prefix: `restart/${i}` }))
        })
        if (answer.status === 201) acknowledged.add((JSON.parse(answer.body) as WorkflowSummaryJson).id)
        // real time: the load's pace while PostgreSQL restarts.
        await sleep(answer.status === 201 ? 100 : 50)
      }
    }
    const reader = async () => {
      while (!stop) {
        const ids = [...acknowledged]
        const id = ids[Math.floor(Math.random() * ids.length)]
        await (id === undefined
          ? request("GET /v1/user", "/v1/user", { headers: user.auth })
          : request("GET /v1/workflow/{id}", `/v1/workflow/${id}`, { headers: user.auth }))
        await request("GET /v1/workflow", "/v1/workflow?per_page=5", { headers: user.auth })
        // real time: the load's pace while PostgreSQL restarts.
        await sleep(50)
      }
    }
    const load = Promise.all([creator(), creator(), reader(), reader()])

    await poll("30 workflows to be acknowledged before the restart", () => (acknowledged.size >= 30 ? true : undefined), 60_000, 50)
    const restartAt = Date.now()
    await restartPostgres()
    const restartedAt = Date.now()
    const recoveredAt = await poll("GET /v1/user to succeed again", async () =>
      (await timedFetch(wes.base, "/v1/user", { headers: user.auth })).status === 200 ? Date.now() : undefined, RECOVER_WITHIN_MS, 50)
    // Keep the load on after recovery: new work is accepted and runs.
    const ackAtRecovery = acknowledged.size
    await poll("20 more workflows to be acknowledged after recovery", () =>
      (acknowledged.size >= ackAtRecovery + 20 ? true : undefined), 60_000, 50)
    stop = true
    await load

    // Every answer was a success or the contract's 503, and none took long.
    const unexpected = seen.filter((a) => ![200, 201].includes(a.status) && !isContract503(a))
    expect(unexpected.map((a) => `${a.what} ${a.status} after ${a.ms} ms: ${a.body.slice(0, 200)}`)).toEqual([])
    const slow = seen.filter((a) => a.ms >= ANSWER_WITHIN_MS)
    expect(slow.map((a) => `${a.what} ${a.status} ${a.ms} ms`)).toEqual([])
    const unavailable = seen.filter((a) => a.status === 503)
    expect(unavailable.length).toBeGreaterThan(0)
    // The same process served before, during and after.
    expect(wes.child.exitCode).toBeNull()
    expect((await timedFetch(wes.base, "/readyz")).status).toBe(200)

    // Nothing acknowledged is lost: every 201 exists and completes, exactly once, submitted once.
    let last: Record<string, number> = {}
    await poll(() => `every workflow to complete; by status: ${JSON.stringify(last)}`, async () => {
      last = await database.statusCounts().catch(() => ({}))
      return last["completed"] === acknowledged.size ? true : undefined
    }, 90_000, 250)
    const check = await checkRun(database, acknowledged, fakes)
    expect(check.missing).toEqual([])
    expect(check.stored).toHaveLength(acknowledged.size)
    expect(check.unfinished).toEqual([])
    expect(check.endedOtherThanOnce).toEqual([])
    expect(check.counts.duplicates).toEqual([])
    expect(check.counts.unique).toBe(acknowledged.size)

    const during = seen.filter((a) => a.at >= restartAt)
    const firstOk = during.find((a) => a.status < 300 && a.at > restartedAt)
    console.log(
      `[db-restart] requests=${seen.length} acknowledged=${acknowledged.size} (at_recovery=${ackAtRecovery}) ` +
        `pg_ctlcluster_restart_ms=${restartedAt - restartAt} answers_503=${unavailable.length} ` +
        `503_ms: median=${median(unavailable.map((a) => a.ms))} max=${Math.max(...unavailable.map((a) => a.ms))} ` +
        `slowest_answer_ms=${Math.max(...seen.map((a) => a.ms))} ` +
        `serving_again_after_restart_returned_ms=${recoveredAt - restartedAt} first_success_after_ms=${firstOk === undefined ? "none" : firstOk.at - restartedAt} ` +
        `completed=${check.stored.length} prompts_received=${check.counts.total} duplicates=${check.counts.duplicates.length} ` +
        `logged_problems=${JSON.stringify(wes.problems())}`
    )
  }, 240_000)
})
