/**
 * Soak (reliability suite 8): one `wes serve` process on PostgreSQL under a steady submission
 * rate for two minutes, with a fault every 10 s in turn: a runner restart, every runner WebSocket
 * dropped, and the server's database connections killed with pg_terminate_backend. Its RSS and
 * open file descriptors are sampled after warm-up and after the load stops; neither may grow
 * without bound. Serial phase only: it runs for minutes.
 *
 * Prints one `[soak]` line with its figures.
 */
import { slowWorkflow } from "@wes/runner-client/testing"
import { describe, expect, it } from "vitest"
import { awaitAllTerminal, checkRun, isContract503, localPortsOf, mapLimit, processFigures, range, submitUntilAcknowledged, timedFetch } from "./chaos.js"
import { addRunner, createUser, sleep, startInstance, subscribe } from "./instances.js"
import { processSuite } from "./process-suite.js"

const LOAD_MS = 120_000
const FAULT_EVERY_MS = 10_000
const SUBMIT_EVERY_MS = 250
/** The bounds: RSS may not grow by 150 MB; descriptors by more than the pool and the runner sockets. */
const RSS_GROWTH_MB = 150
const FD_GROWTH = 16

const suite = processSuite({ waitForPostgres: true })

describe("soak", () => {
  it("two minutes of steady load with runner restarts, WebSocket drops and killed database connections: no leak, nothing lost or run twice", async () => {
    const database = await suite.database()
    const wes = await startInstance("S", database.url(), { WES_TIER_LIMITS: JSON.stringify({ plus: { active_workflows: 2_000, workflows_per_day: 50_000 } }) })
    const fakes = await suite.fakes(4)
    const user = await createUser(wes)
    for (const [i, f] of fakes.entries()) await addRunner(wes, user, `r${i}`, f.url)
    const workflow = (i: number) => slowWorkflow({ seconds: 0.2 + (i % 4) * 0.1, steps: 2, prefix: `soak/${i}` })
    const acknowledged = new Set<string>()
    const submit = async (i: number) => {
      const w = await submitUntilAcknowledged(() => wes, user, workflow(i), `soak-${i}`)
      acknowledged.add(w.id)
      return w
    }

    // Warm-up: enough concurrent work to open the pool and every runner connection.
    await mapLimit(range(40), 10, (i) => submit(i))
    await awaitAllTerminal(database, 40, 60_000)
    // real time: the process settles (timers, pools, GC) before its first RSS and descriptor figures.
    await sleep(2_000)
    const start = processFigures(wes.pid)

    const faults: Array<string> = []
    let peakRss = start.rssMb
    let stop = false
    let n = 40
    const loadStarted = Date.now()
    const submitter = (async () => {
      while (!stop) {
        const i = n++
        const w = await submit(i)
        // Every tenth workflow is followed to its end over SSE, like a UI would.
        // (A stream cut by the faults ends its read; a UI would reconnect with Last-Event-ID.)
        if (i % 10 === 0) void subscribe(wes, user, w.id).then((s) => s.ended.catch(() => undefined), () => undefined)
        // real time: the steady submission rate the soak measures under.
        await sleep(SUBMIT_EVERY_MS)
      }
    })()
    let reads = 0
    let reads503 = 0
    const reader = (async () => {
      while (!stop) {
        const ids = [...acknowledged]
        const answer = await timedFetch(wes.base, `/v1/workflow/${ids[Math.floor(Math.random() * ids.length)]!}`, { headers: user.auth })
        reads++
        if (answer.status === 503 && isContract503(answer)) reads503++
        else expect(answer.status).toBe(200)
        // real time: the readers' pace.
        await sleep(100)
      }
    })()
    for (let k = 0; Date.now() - loadStarted < LOAD_MS; k++) {
      // real time: a fault every FAULT_EVERY_MS for LOAD_MS, the soak's schedule.
      await sleep(Math.min(FAULT_EVERY_MS, Math.max(0, LOAD_MS - (Date.now() - loadStarted))))
      if (Date.now() - loadStarted >= LOAD_MS) break
      peakRss = Math.max(peakRss, processFigures(wes.pid).rssMb)
      const kind = k % 3
      if (kind === 0) {
        const f = fakes[(k / 3) % fakes.length]!
        await f.restart()
        faults.push("runner-restart")
      } else if (kind === 1) {
        for (const f of fakes) f.dropWebSockets()
        faults.push("ws-drop")
      } else {
        // Only this server's connections: others may share the PostgreSQL server.
        const ports = localPortsOf(wes.pid)
        const killed = await database.query((sql) =>
          sql<{ n: number }>`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
            WHERE application_name = 'wes' AND datname = current_database() AND client_port IN ${sql.in(ports)}`
        )
        faults.push(`pg-kill:${killed[0]!.n}`)
      }
    }
    stop = true
    await Promise.all([submitter, reader])
    const loadMs = Date.now() - loadStarted

    const total = acknowledged.size
    await awaitAllTerminal(database, total, 90_000)
    // real time: the process settles after the load before its last RSS and descriptor figures.
    await sleep(5_000)
    const end = processFigures(wes.pid)

    const check = await checkRun(database, acknowledged, fakes)
    expect(check.missing).toEqual([])
    expect(check.unfinished).toEqual([])
    expect(check.endedOtherThanOnce).toEqual([])
    expect(check.counts.duplicates).toEqual([])
    // A runner restart loses what it held (RunnerLost); everything else completes.
    const otherwise = check.stored.filter((w) => w.status !== "completed" && !(w.status === "failed" && w.exception_type === "RunnerLost"))
    expect(otherwise.map((w) => `${w.id}:${w.status}:${w.exception_type}`)).toEqual([])
    expect(wes.child.exitCode).toBeNull()

    const lost = check.stored.filter((w) => w.status === "failed").length
    console.log(
      `[soak] load_ms=${loadMs} workflows=${total} completed=${total - lost} runner_lost=${lost} reads=${reads} reads_503=${reads503} ` +
        `faults=${faults.join(",")} | rss_mb start=${start.rssMb} peak=${peakRss} end=${end.rssMb} | fds start=${start.fds} end=${end.fds} ` +
        `| prompts_received=${check.counts.total} unique=${check.counts.unique} duplicates=${check.counts.duplicates.length} ` +
        `logged_problems=${JSON.stringify(wes.problems())}`
    )
    expect(end.rssMb).toBeLessThan(start.rssMb + RSS_GROWTH_MB)
    expect(end.fds).toBeLessThanOrEqual(start.fds + FD_GROWTH)
  }, 360_000)
})
