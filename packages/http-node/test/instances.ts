/**
 * Several `wes serve` processes on one PostgreSQL database, as an operator runs them: each
 * instance is a child process started from the sources (node with tsx's loader), configured by environment
 * variables, stopped by signals. The database is the machine's PostgreSQL; every test works in
 * its own fresh schema (selected with `options=-c search_path=...` in DATABASE_URL), dropped
 * afterwards, so test files run in parallel.
 */
import type { SqlError } from "effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import { json, readJson, type RunnerJson, workflowForm, type WorkflowSummaryJson } from "./harness.js"
import { poll } from "./polling.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, "../../..")
const bin = path.join(here, "..", "src", "bin.ts")

export const DATABASE_URL = process.env["DATABASE_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
export const ADMIN_TOKEN = "multi-instance-admin-token-0123456789abcdef"
export const TERMINAL: ReadonlyArray<string> = ["completed", "failed", "invalid", "cancelled"]

/**
 * Real time, for what a real process does over time: a load's pace, a fault's length. Never to
 * wait for something to happen (that is `poll`, polling.ts); each use says why with `// real time:`.
 */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

export const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })

/** The database URL with `search_path` set to `schema`, optionally through another host:port (a proxy). */
export const urlFor = (schema: string, via?: { readonly port: number }): string => {
  const url = new URL(DATABASE_URL)
  url.searchParams.set("options", `-c search_path=${schema}`)
  if (via !== undefined) {
    url.hostname = "127.0.0.1"
    url.port = String(via.port)
  }
  return url.toString()
}

export interface LeaseRow {
  readonly runner_id: string
  readonly owner: string
  readonly epoch: string
  readonly live: boolean
}

/** A fresh schema of the test database and a small pool on it, for setup and inspection. */
export class TestDatabase {
  private constructor(
    readonly schema: string,
    private readonly runtime: ManagedRuntime.ManagedRuntime<PgClient.PgClient, SqlError>
  ) {}

  static async create(): Promise<TestDatabase> {
    const schema = `wes_e2e_${globalThis.crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`
    await TestDatabase.admin((sql) => sql`CREATE SCHEMA ${sql(schema)}`)
    const runtime = ManagedRuntime.make(PgClient.layer({
      url: Redacted.make(urlFor(schema)),
      maxConnections: 2,
      applicationName: "wes-e2e-inspect"
    }))
    return new TestDatabase(schema, runtime)
  }

  /** Runs `f` on a short-lived connection outside any test schema. */
  static admin<A>(f: (sql: PgClient.PgClient) => Effect.Effect<A, SqlError>): Promise<A> {
    return Effect.runPromise(Effect.flatMap(PgClient.PgClient, f).pipe(
      Effect.scoped,
      Effect.provide(PgClient.layer({ url: Redacted.make(DATABASE_URL), maxConnections: 1, applicationName: "wes-e2e-admin" }))
    ))
  }

  /** DATABASE_URL for an instance (directly, or through a proxy on `via.port`). */
  url(via?: { readonly port: number }): string {
    return urlFor(this.schema, via)
  }

  query<A>(f: (sql: PgClient.PgClient) => Effect.Effect<A, SqlError>): Promise<A> {
    return this.runtime.runPromise(Effect.flatMap(PgClient.PgClient, f))
  }

  /** Workflow counts by status. */
  async statusCounts(): Promise<Record<string, number>> {
    const rows = await this.query((sql) => sql<{ status: string; n: number }>`SELECT status, count(*)::int AS n FROM workflows GROUP BY status`)
    return Object.fromEntries(rows.map((r) => [r.status, r.n]))
  }

  /** Every runner lease row, and whether it is live now. */
  leases(): Promise<ReadonlyArray<LeaseRow>> {
    return this.query((sql) =>
      sql<LeaseRow>`SELECT runner_id::text AS runner_id, owner, epoch::text AS epoch, expires_at > now() AS live FROM runner_leases`
    )
  }

  /** Live workflow claims (waiting workflows stamped by an instance whose claim has not expired), by owner. */
  async liveClaims(): Promise<Record<string, number>> {
    const rows = await this.query((sql) =>
      sql<{ owner: string; n: number }>`SELECT claimed_by AS owner, count(*)::int AS n FROM workflows
        WHERE claimed_by IS NOT NULL AND lease_expires_at > now() AND status IN ('accepted', 'uploaded')
        GROUP BY claimed_by`
    )
    return Object.fromEntries(rows.map((r) => [r.owner, r.n]))
  }

  /** Closes the pool and drops the schema with everything in it. */
  async drop(): Promise<void> {
    await this.runtime.dispose()
    await TestDatabase.admin((sql) => sql`DROP SCHEMA IF EXISTS ${sql(this.schema)} CASCADE`)
  }
}

/** One `wes serve` child process. */
export interface Instance {
  readonly name: string
  readonly port: number
  readonly base: string
  readonly child: ChildProcess
  readonly pid: number
  readonly out: { stdout: string; stderr: string }
  readonly exited: Promise<number | null>
  /** Fetch relative to the instance. */
  readonly fetch: (path: string, init?: RequestInit) => Promise<Response>
  /** Whether a runner lease owner name is this process's (`wes-<host>-<pid>-<hex>`). */
  readonly owns: (owner: string) => boolean
  /** Warnings and errors logged so far, counted by message. */
  readonly problems: () => Record<string, number>
}

const children = new Set<ChildProcess>()
process.once("exit", () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL")
})

/** Kills every instance still running (afterEach). */
export const killAll = async (): Promise<void> => {
  const running = [...children].filter((c) => c.exitCode === null && c.signalCode === null)
  await Promise.all(running.map((c) =>
    new Promise<void>((resolve) => {
      c.once("exit", () => resolve())
      c.kill("SIGKILL")
    })
  ))
  children.clear()
}

class PortTaken extends Error {}

/**
 * Starts `wes serve` on `databaseUrl` with short leases and no rate limit; resolves once it
 * answers /healthz. A free port is picked first, so another process may take it in between:
 * then it starts again on another port.
 */
export const startInstance = async (name: string, databaseUrl: string, env: Record<string, string> = {}): Promise<Instance> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(name, databaseUrl, env)
    } catch (e) {
      if (!(e instanceof PortTaken) || attempt === 3) throw e
    }
  }
}

const startOnce = async (name: string, databaseUrl: string, env: Record<string, string>): Promise<Instance> => {
  const port = await freePort()
  // node itself with tsx's loader (not the tsx wrapper): the child IS the server, so a SIGKILL
  // kills the server without any chance to clean up, and its pid is the one in its lease names.
  const child = spawn(process.execPath, ["--import", "tsx", "--conditions=@wes/source", bin, "serve"], {
    cwd: root,
    env: {
      ...process.env,
      WES_STORAGE: "postgres",
      DATABASE_URL: databaseUrl,
      WES_ADMIN_TOKEN: ADMIN_TOKEN,
      // The fake runners listen on 127.0.0.1.
      WES_RUNNER_ALLOW_PRIVATE: "true",
      WES_RATE_LIMIT: "off",
      WES_LEASE: "3 seconds",
      // Deep runner queues, so a kill or restart finds many prompts on the runners.
      WES_RUNNER_CONCURRENCY: "64",
      WES_PORT: String(port),
      WES_SHUTDOWN_GRACE: "2 seconds",
      ...env
    },
    stdio: ["ignore", "pipe", "pipe"]
  })
  children.add(child)
  const out = { stdout: "", stderr: "" }
  child.stdout!.on("data", (d: Buffer) => (out.stdout += d.toString()))
  child.stderr!.on("data", (d: Buffer) => (out.stderr += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  const base = `http://127.0.0.1:${port}`
  // Listening for real: /healthz answers (the "listening" log line may come first).
  await poll(() => `${name} to listen; stdout: ${out.stdout.slice(-2000)}\nstderr: ${out.stderr.slice(-2000)}`, async () => {
    const exitedEarly = () => {
      if (child.exitCode === null && child.signalCode === null) return
      const output = `${out.stdout.slice(-3000)}\n${out.stderr.slice(-3000)}`
      throw output.includes("EADDRINUSE")
        ? new PortTaken(`${name}: port ${port} taken`)
        : new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before it was ready: ${output}`)
    }
    exitedEarly()
    if (!out.stdout.includes("wes serve listening")) return undefined
    const res = await fetch(`${base}/healthz`).catch(() => undefined)
    exitedEarly()
    return res?.status === 200 ? true : undefined
  }, 60_000, 50)
  const pid = child.pid!
  return {
    name,
    port,
    base,
    child,
    pid,
    out,
    exited,
    fetch: (p, init) => fetch(base + p, init),
    owns: (owner) => owner.includes(`-${pid}-`),
    problems: () => {
      const counts: Record<string, number> = {}
      for (const line of out.stdout.split("\n")) {
        if (!line.startsWith("{")) continue
        const entry = JSON.parse(line) as { level?: string; msg?: string }
        if (entry.level === "warn" || entry.level === "error" || entry.level === "fatal") {
          const key = `${entry.level}:${entry.msg ?? ""}`
          counts[key] = (counts[key] ?? 0) + 1
        }
      }
      return counts
    }
  }
}

export interface TestUser {
  readonly id: string
  readonly auth: Record<string, string>
}

/** A plus-tier user (500 active workflows, 200 runners) and a token, through the operator API. */
export const createUser = async (instance: Instance): Promise<TestUser> => {
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` }
  const created = await instance.fetch("/admin/v1/users", json({ tier: "plus" }, admin))
  if (created.status !== 201) throw new Error(`createUser: ${created.status} ${await created.text()}`)
  const { id } = await readJson<{ id: string }>(created)
  const issued = await instance.fetch(`/admin/v1/users/${id}/tokens`, json({ name: "e2e" }, admin))
  if (issued.status !== 201) throw new Error(`issueToken: ${issued.status} ${await issued.text()}`)
  const { token } = await readJson<{ token: string }>(issued)
  return { id, auth: { authorization: `Bearer ${token}` } }
}

export const addRunner = async (instance: Instance, user: TestUser, name: string, endpoint: string, tags: ReadonlyArray<string> = []) => {
  const res = await instance.fetch("/v1/runner", json({ name, endpoint, tags }, user.auth))
  if (res.status !== 201) throw new Error(`addRunner: ${res.status} ${await res.text()}`)
  return readJson<RunnerJson>(res)
}

export const createWorkflow = async (
  instance: Instance,
  user: TestUser,
  workflow: unknown,
  fields: Parameters<typeof workflowForm>[0] = {}
): Promise<WorkflowSummaryJson> => {
  const res = await instance.fetch("/v1/workflow", { method: "POST", headers: user.auth, body: workflowForm({ name: "e2e", ...fields }, workflow) })
  if (res.status !== 201) throw new Error(`create on ${instance.name}: ${res.status} ${await res.text()}`)
  return readJson<WorkflowSummaryJson>(res)
}

/**
 * Samples the runner leases every `everyMs` so that a WebSocket client id seen by a runner
 * (`wes-<runner>-<epoch>`) can be attributed to the instance that held that epoch.
 */
export const watchLeases = (db: TestDatabase, everyMs = 200) => {
  const owners = new Map<string, string>()
  let stopped = false
  const record = (rows: ReadonlyArray<LeaseRow>) => {
    for (const r of rows) owners.set(`wes-${r.runner_id}-${r.epoch}`, r.owner)
  }
  const loop = (async () => {
    while (!stopped) {
      record(await db.leases())
      // real time: a sampling interval (a lease lives for seconds; every epoch is seen).
      await sleep(everyMs)
    }
  })()
  return {
    /** The owner of the acquisition that used `clientId`, if it was seen. */
    ownerOf: (clientId: string | null | undefined) => (clientId == null ? undefined : owners.get(clientId)),
    stop: async () => {
      stopped = true
      await loop
      record(await db.leases())
    }
  }
}

/** Counts the prompt ids in `submissions`: total, unique, and the ids received more than once. */
export const countSubmissions = (submissions: ReadonlyArray<{ readonly prompt_id: string | null }>) => {
  const seen = new Map<string, number>()
  for (const s of submissions) if (s.prompt_id !== null) seen.set(s.prompt_id, (seen.get(s.prompt_id) ?? 0) + 1)
  return {
    total: submissions.length,
    unique: seen.size,
    duplicates: [...seen].filter(([, n]) => n > 1).map(([id]) => id)
  }
}

export interface SseEvent {
  readonly id: string
  readonly event: string
  readonly data: Record<string, unknown>
}

/** A workflow's event stream, read in the background. */
export const subscribe = async (instance: Instance, user: TestUser, workflowId: string, lastEventId?: string) => {
  const res = await instance.fetch(`/v1/workflow/${workflowId}/subscribe`, {
    headers: { ...user.auth, ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }) }
  })
  if (res.status !== 200) throw new Error(`subscribe on ${instance.name}: ${res.status} ${await res.text()}`)
  const events: Array<SseEvent> = []
  const reader = res.body!.getReader()
  const ended = (async () => {
    const decoder = new TextDecoder()
    let buffer = ""
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return events
      buffer += decoder.decode(value, { stream: true })
      let end: number
      while ((end = buffer.indexOf("\n\n")) !== -1) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const fields: Record<string, string> = {}
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue
          const i = line.indexOf(":")
          fields[line.slice(0, i)] = line.slice(i + 1).trim()
        }
        if (fields["event"] !== undefined) {
          events.push({ id: fields["id"]!, event: fields["event"], data: JSON.parse(fields["data"]!) as Record<string, unknown> })
        }
      }
    }
  })()
  return {
    events,
    ended,
    /** Waits until an event satisfies `predicate`. */
    until: (what: string, predicate: (e: SseEvent) => boolean) =>
      poll(() => `${what}; got ${JSON.stringify(events.map((e) => [e.id, e.event, e.data["status"]]))}`, () => events.find(predicate), 20_000, 20)
  }
}
