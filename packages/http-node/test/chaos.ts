/**
 * Shared pieces of the crash, fault and soak suites: a client that keeps submitting the way a
 * careful user would (an Idempotency-Key per workflow, retried on another instance when one does
 * not answer), the checker that reads the store and the fakes' prompt logs, and process probes.
 */
import { execFile } from "node:child_process"
import { readdirSync, readFileSync, readlinkSync } from "node:fs"
import { promisify } from "node:util"
import type { FakeComfyUI } from "@wes/runner-client/testing"
import type { ErrorBody, WorkflowSummaryJson } from "./harness.js"
import { workflowForm } from "./harness.js"
import { countSubmissions, DATABASE_URL, type Instance, sleep, TERMINAL, TestDatabase, type TestUser } from "./instances.js"
import { poll } from "./polling.js"

/** Runs `f` over `items` with at most `concurrency` at a time, keeping the order of results. */
export const mapLimit = async <A, B>(items: ReadonlyArray<A>, concurrency: number, f: (a: A, i: number) => Promise<B>): Promise<Array<B>> => {
  const results: Array<B> = new Array<B>(items.length)
  let next = 0
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < items.length) {
      const i = next++
      results[i] = await f(items[i]!, i)
    }
  }))
  return results
}

export const range = (n: number) => Array.from({ length: n }, (_, i) => i)

/** What a client saw of one request. */
export interface Answer {
  readonly status: number
  readonly body: string
  readonly ms: number
}

/** One request with a client-side deadline; a hang or a broken connection shows as status 599. */
export const timedFetch = async (base: string, path: string, init: RequestInit = {}, deadlineMs = 30_000): Promise<Answer> => {
  const started = Date.now()
  try {
    const res = await fetch(base + path, { ...init, signal: AbortSignal.timeout(deadlineMs) })
    const body = await res.text()
    return { status: res.status, body, ms: Date.now() - started }
  } catch (e) {
    return { status: 599, body: String(e), ms: Date.now() - started }
  }
}

/** Whether `answer` is the contract's 503: `{status: 503, message}`. */
export const isContract503 = (answer: Answer): boolean => {
  if (answer.status !== 503) return false
  try {
    const body = JSON.parse(answer.body) as ErrorBody
    return body.status === 503 && typeof body.message === "string" && body.message.length > 0
  } catch {
    return false
  }
}

/**
 * Creates a workflow with `Idempotency-Key: key`, trying the instances `pick(attempt)` returns
 * until one acknowledges it with 201 (a repeat of the key returns the original workflow, so a
 * retry after a lost answer creates nothing new). Returns the acknowledged summary.
 */
export const submitUntilAcknowledged = async (
  pick: (attempt: number) => Instance,
  user: TestUser,
  workflow: unknown,
  key: string,
  options: { readonly fields?: Record<string, string>; readonly deadlineMs?: number; readonly attempts?: number } = {}
): Promise<WorkflowSummaryJson> => {
  const failures: Array<string> = []
  for (let attempt = 0; attempt < (options.attempts ?? 40); attempt++) {
    const instance = pick(attempt)
    const answer = await timedFetch(instance.base, "/v1/workflow", {
      method: "POST",
      headers: { ...user.auth, "idempotency-key": key },
      body: workflowForm({ name: key, ...options.fields }, workflow)
    }, options.deadlineMs ?? 20_000)
    if (answer.status === 201) return JSON.parse(answer.body) as WorkflowSummaryJson
    failures.push(`${instance.name}:${answer.status}`)
    // real time: a careful client's pause before it tries again (the instance may be down or restarting).
    await sleep(250)
  }
  throw new Error(`workflow ${key} was never acknowledged: ${failures.join(", ")}`)
}

/** Per workflow, how many terminal `status` events the store holds. */
export const terminalEvents = async (db: TestDatabase): Promise<Map<string, number>> => {
  const rows = await db.query((sql) =>
    sql<{ id: string; n: number }>`SELECT workflow_id::text AS id, count(*)::int AS n FROM workflow_events
      WHERE type = 'status' AND data->>'status' IN ('completed', 'failed', 'invalid', 'cancelled') GROUP BY workflow_id`
  )
  return new Map(rows.map((r) => [r.id, r.n]))
}

export interface StoredWorkflow {
  readonly id: string
  readonly status: string
  readonly exception_type: string | null
  /** Earlier runs retried on another runner. */
  readonly attempts: number
}

export const storedWorkflows = (db: TestDatabase): Promise<ReadonlyArray<StoredWorkflow>> =>
  db.query((sql) => sql<StoredWorkflow>`SELECT id::text AS id, status, exception_type, jsonb_array_length(attempts)::int AS attempts FROM workflows`)

/** Waits until every workflow in the store is terminal and there are `expected` of them; returns when. */
export const awaitAllTerminal = async (db: TestDatabase, expected: number, timeoutMs: number): Promise<number> => {
  let last: Record<string, number> = {}
  await poll(() => `all ${expected} workflows to end; by status: ${JSON.stringify(last)}`, async () => {
    last = await db.statusCounts()
    const total = Object.values(last).reduce((x, y) => x + y, 0)
    const terminal = TERMINAL.reduce((n, s) => n + (last[s] ?? 0), 0)
    return total === expected && terminal === expected ? true : undefined
  }, timeoutMs, 200)
  return Date.now()
}

/**
 * The checker: every acknowledged workflow is in the store and ended exactly once (one terminal
 * status event), nothing is left unfinished, and no prompt id reached the runners twice.
 * Returns the submission counts for the report.
 */
export const checkRun = async (db: TestDatabase, acknowledged: ReadonlySet<string>, fakes: ReadonlyArray<FakeComfyUI>) => {
  const stored = await storedWorkflows(db)
  const byId = new Map(stored.map((w) => [w.id, w]))
  const missing = [...acknowledged].filter((id) => !byId.has(id))
  const unfinished = stored.filter((w) => !TERMINAL.includes(w.status)).map((w) => `${w.id}:${w.status}`)
  const ends = await terminalEvents(db)
  const endedOtherThanOnce = stored.filter((w) => ends.get(w.id) !== 1).map((w) => `${w.id}:${ends.get(w.id) ?? 0}`)
  const accepted = fakes.flatMap((f) => f.submissions.filter((s) => s.status === 200))
  // A retry (issue 17) posts the same prompt id to another runner, once per recorded attempt: a
  // duplicate is a prompt posted twice to one runner, or to more runners than its attempts allow.
  const perRunner = fakes.map((f) => countSubmissions(f.submissions.filter((s) => s.status === 200)))
  const runnersOf = new Map<string, number>()
  for (const f of fakes) {
    for (const id of new Set(f.submissions.filter((s) => s.status === 200).map((s) => s.prompt_id))) {
      if (id !== null) runnersOf.set(id, (runnersOf.get(id) ?? 0) + 1)
    }
  }
  const beyondAttempts = [...runnersOf].filter(([id, n]) => n > 1 + (byId.get(id)?.attempts ?? 0)).map(([id]) => id)
  const counts = { ...countSubmissions(accepted), duplicates: [...perRunner.flatMap((c) => c.duplicates), ...beyondAttempts] }
  return { stored, byId, missing, unfinished, endedOtherThanOnce, counts }
}

/**
 * For a failing check: every post of each id in `ids` (runner index, client id, time) beside the
 * workflow's status events, so a duplicate shows which instance posted it when.
 */
export const explainSubmissions = async (db: TestDatabase, ids: ReadonlyArray<string>, fakes: ReadonlyArray<FakeComfyUI>): Promise<string> => {
  if (ids.length === 0) return ""
  const events = await db.query((sql) =>
    sql<{ workflow_id: string; type: string; data: unknown; created_at: string }>`SELECT workflow_id::text AS workflow_id, type, data, created_at::text AS created_at
      FROM workflow_events WHERE workflow_id::text IN ${sql.in([...ids])} AND type <> 'progress' ORDER BY seq`
  )
  return ids.map((id) => {
    const posts = fakes.flatMap((f, i) =>
      f.submissions.filter((s) => s.prompt_id === id).map((s) => `runner ${i} ${s.status} client=${s.client_id} at=${new Date(s.at).toISOString()}`)
    )
    const story = events.filter((e) => e.workflow_id === id).map((e) => `${e.created_at} ${e.type} ${JSON.stringify(e.data)}`)
    return `${id}\n  posts: ${posts.join("; ")}\n  events: ${story.join("\n          ")}`
  }).join("\n")
}

/** Resident set size (MB) and open file descriptors of a process, from /proc. */
export const processFigures = (pid: number): { readonly rssMb: number; readonly fds: number } => {
  const status = readFileSync(`/proc/${pid}/status`, "utf8")
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? "0")
  return { rssMb: Math.round(kb / 102.4) / 10, fds: readdirSync(`/proc/${pid}/fd`).length }
}

/**
 * Local TCP ports of the sockets `pid` holds (its fd inodes matched against /proc/net/tcp), so a
 * test can act on that process's database connections only (pg_stat_activity.client_port).
 */
export const localPortsOf = (pid: number): ReadonlyArray<number> => {
  const inodes = new Set<string>()
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = readlinkSync(`/proc/${pid}/fd/${fd}`)
      const m = /^socket:\[(\d+)\]$/.exec(target)
      if (m !== null) inodes.add(m[1]!)
    } catch {
      // closed meanwhile
    }
  }
  const ports: Array<number> = []
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/)
      if (cols.length > 9 && inodes.has(cols[9]!)) ports.push(parseInt(cols[1]!.split(":")[1]!, 16))
    }
  }
  return ports
}

const run = promisify(execFile)

/** Whether the machine's PostgreSQL accepts connections now. */
export const postgresReady = async (): Promise<boolean> => {
  const url = new URL(DATABASE_URL)
  try {
    await run("pg_isready", ["-h", url.hostname, "-p", url.port || "5432", "-q"])
    return true
  } catch {
    return false
  }
}

/** Waits until PostgreSQL accepts connections and answers a query (so later suites find it up). */
export const awaitPostgres = async (timeoutMs = 60_000): Promise<void> => {
  await poll("PostgreSQL to accept connections", async () => {
    if (!(await postgresReady())) return undefined
    return TestDatabase.admin((sql) => sql`SELECT 1`).then(() => true, () => undefined)
  }, timeoutMs, 200)
}

/**
 * Restarts the machine's PostgreSQL cluster (`pg_ctlcluster ... restart`: a fast shutdown that
 * ends every connection, then a start). Resolves when the command returns.
 */
export const restartPostgres = async (): Promise<void> => {
  const versions = readdirSync("/etc/postgresql")
  if (versions.length !== 1) throw new Error(`expected one PostgreSQL version in /etc/postgresql, found ${versions.join(", ")}`)
  await run("pg_ctlcluster", ["--skip-systemctl-redirect", versions[0]!, "main", "restart"])
}
