/**
 * Losing the database (issue 5, item 8): a running `wes serve` whose PostgreSQL connections
 * break (reset, new ones refused or blackholed) or go silent (a partition) answers 503 quickly
 * (no hang, no crash) and recovers by itself when the database is back. The machine's PostgreSQL is shared with other test files, so the instance reaches it
 * through a TCP proxy that this test cuts and restores.
 */
import { saveImageWorkflow, slowWorkflow } from "@wes/runner-client/testing"
import { describe, expect, it } from "vitest"
import { type ErrorBody, readJson, type WorkflowDetailJson, workflowForm } from "./harness.js"
import {
  addRunner,
  createUser,
  createWorkflow,
  DATABASE_URL,
  type Instance,
  sleep,
  startInstance,
  subscribe,
  type TestUser
} from "./instances.js"
import { poll, within } from "./polling.js"
import { processSuite } from "./process-suite.js"
import { type CutMode, TcpProxy } from "./tcp-proxy.js"

const suite = processSuite()

/** Generous bound for one request while the database is gone: the pool's connect timeout is 5 s, the silence timeout 2 s. */
const ANSWER_WITHIN_MS = 10_000

interface Timed {
  readonly what: string
  readonly status: number
  readonly body: string
  readonly ms: number
}

/** One request, timed; a hang shows as a 599 after 30 s instead of a test timeout. */
const timed = async (instance: Instance, what: string, path: string, init: RequestInit = {}): Promise<Timed> => {
  const started = Date.now()
  try {
    const res = await instance.fetch(path, { ...init, signal: AbortSignal.timeout(30_000) })
    const body = await res.text()
    return { what, status: res.status, body, ms: Date.now() - started }
  } catch (e) {
    return { what, status: 599, body: String(e), ms: Date.now() - started }
  }
}

const getWorkflow = async (instance: Instance, user: TestUser, id: string) =>
  readJson<WorkflowDetailJson>(await instance.fetch(`/v1/workflow/${id}`, { headers: user.auth }))

const awaitStatus = (instance: Instance, user: TestUser, id: string, statuses: ReadonlyArray<string>, timeoutMs: number) => {
  let last = ""
  return poll(() => `workflow ${id} to be ${statuses.join("|")} (is ${last})`, async () => {
    const res = await instance.fetch(`/v1/workflow/${id}`, { headers: user.auth })
    if (res.status !== 200) return undefined
    const w = await readJson<WorkflowDetailJson>(res)
    last = w.status
    if (["failed", "invalid", "cancelled"].includes(w.status) && !statuses.includes(w.status)) {
      throw new Error(`workflow ${id} ended ${w.status}: ${w.exception_type}: ${w.exception_message}`)
    }
    return statuses.includes(w.status) ? w : undefined
  }, timeoutMs, 100)
}

describe("database connection loss", () => {
  it("answers 503 quickly while PostgreSQL is unreachable, keeps running, and recovers by itself", async () => {
    const db = await suite.database()
    const target = new URL(DATABASE_URL)
    const proxy = suite.closeAfter(await TcpProxy.start({ host: target.hostname, port: Number(target.port || "5432") }))
    // A short silence timeout: in `silence` mode the connections already open stop carrying
    // anything (a partition), and a statement on one must fail after this long instead of hanging.
    const wes = await startInstance("W", db.url({ port: proxy.port }), { WES_DB_SILENCE_TIMEOUT: "2 seconds" })
    const fake = (await suite.fakes(1))[0]!
    const user = await createUser(wes)
    await addRunner(wes, user, "r", fake.url)
    const before = await createWorkflow(wes, user, saveImageWorkflow())
    await awaitStatus(wes, user, before.id, ["completed"], 20_000)

    const figures: Array<string> = []
    const modes = ["refuse", "blackhole", "silence"] satisfies ReadonlyArray<CutMode>
    for (const mode of modes) {
      // Work on the runner while the database goes away: it must end well afterwards.
      const across = await createWorkflow(wes, user, slowWorkflow({ seconds: 1, steps: 4, prefix: `outage/${mode}` }))
      await awaitStatus(wes, user, across.id, ["running"], 20_000)

      proxy.cut(mode)
      const cutAt = Date.now()
      // Each kind of request, plus a burst at once (the pool's queue must not turn it into a hang).
      const answers: Array<Timed> = await Promise.all([
        timed(wes, "GET /v1/user", "/v1/user", { headers: user.auth }),
        timed(wes, "GET /v1/workflow/{id}", `/v1/workflow/${before.id}`, { headers: user.auth }),
        timed(wes, "POST /v1/workflow", "/v1/workflow", {
          method: "POST",
          headers: user.auth,
          body: workflowForm({ name: "during the outage" }, saveImageWorkflow())
        }),
        timed(wes, "GET /readyz", "/readyz"),
        ...Array.from({ length: 12 }, (_, i) =>
          timed(wes, `burst GET /v1/workflow/{id} #${i}`, `/v1/workflow/${before.id}`, { headers: user.auth }))
      ])
      // Longer than the runner lease (3 s): the driver loses its lease while the database is gone.
      // real time: the outage must last that long, whatever the instance does meanwhile.
      await sleep(Math.max(0, 4_000 - (Date.now() - cutAt)))
      answers.push(await timed(wes, "GET /v1/user (later)", "/v1/user", { headers: user.auth }))
      const healthz = await timed(wes, "GET /healthz", "/healthz")

      for (const a of answers) {
        expect({ what: a.what, status: a.status, fast: a.ms < ANSWER_WITHIN_MS }).toEqual({ what: a.what, status: 503, fast: true })
        const body = JSON.parse(a.body) as ErrorBody
        expect(body.status).toBe(503)
        expect(typeof body.message).toBe("string")
      }
      expect(healthz.status).toBe(200)
      expect(wes.child.exitCode).toBeNull()

      proxy.restore()
      const restoredAt = Date.now()
      const recovered = await poll("GET /v1/user to succeed again", async () => {
        const r = await timed(wes, "GET /v1/user", "/v1/user", { headers: user.auth })
        return r.status === 200 ? Date.now() : undefined
      }, 30_000, 100)
      await poll("/readyz to answer 200 again", async () => ((await timed(wes, "readyz", "/readyz")).status === 200 ? true : undefined), 30_000, 100)
      expect((await getWorkflow(wes, user, before.id)).status).toBe("completed")

      // The workflow that ran across the outage ends well, and new work runs; its events reach
      // an SSE client live, so the LISTEN connection is back too (SSE has no polling fallback).
      await awaitStatus(wes, user, across.id, ["completed"], 30_000)
      fake.hold()
      const after = await createWorkflow(wes, user, slowWorkflow({ seconds: 0.2, steps: 2, prefix: `outage/after-${mode}` }))
      const stream = await subscribe(wes, user, after.id)
      await stream.until("the workflow to run", (e) => e.event === "status" && e.data["status"] === "running")
      fake.release()
      const events = await within("the event stream to end", stream.ended, 20_000)
      expect(events.at(-1)).toMatchObject({ event: "done", data: { status: "completed" } })
      const afterDone = await getWorkflow(wes, user, after.id)
      expect(afterDone.status).toBe("completed")

      const slowest = Math.max(...answers.map((a) => a.ms))
      figures.push(
        `${mode}: answers=${answers.length}x503 slowest_ms=${slowest} ` +
          `(${answers.slice(0, 4).map((a) => `${a.what}=${a.ms}`).join(", ")}) recovered_after_restore_ms=${recovered - restoredAt}`
      )
    }
    expect(wes.child.exitCode).toBeNull()
    // Nothing was created by the refused POSTs.
    const counts = await db.statusCounts()
    expect(Object.values(counts).reduce((x, y) => x + y, 0)).toBe(1 + 2 * modes.length)
    console.log(`[issue5:db-outage] ${figures.join(" | ")} proxy_connections=${proxy.accepted} logged_problems=${JSON.stringify(wes.problems())}`)
  }, 240_000)
})
