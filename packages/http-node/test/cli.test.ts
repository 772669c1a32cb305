/**
 * The `wes` command as a user runs it: a child process, configured by environment variables,
 * stopped by signals.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { createServer } from "node:net"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, describe, expect, it } from "vitest"
import { readJson, type WorkflowDetailJson, type WorkflowSummaryJson } from "./harness.js"
import { poll } from "./polling.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, "../../..")
const tsx = path.join(root, "node_modules", ".bin", "tsx")
const bin = path.join(here, "..", "src", "bin.ts")

const children: Array<ChildProcess> = []
// SIGTERM first: tsx forwards it to the server. A SIGKILL would only kill tsx and orphan the
// server, which then outlives the test run (it did, in CI, for the dev-mode test).
afterEach(async () => {
  await Promise.all(children.splice(0).map((c) =>
    c.exitCode !== null || c.signalCode !== null ? undefined : new Promise<void>((resolve) => {
      // real time: a deadline, not a wait; a server still up 5 s after SIGTERM is killed.
      const force = setTimeout(() => c.kill("SIGKILL"), 5_000)
      c.once("exit", () => {
        clearTimeout(force)
        resolve()
      })
      c.kill("SIGTERM")
    })))
})

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })

/** Runs `wes <args>` from the sources; output is collected. */
const wes = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const child = spawn(tsx, ["--conditions=@wes/source", bin, ...args], {
    cwd: root,
    // A DATABASE_URL in the developer's shell would now need WES_STORAGE too: these runs use memory.
    env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== "DATABASE_URL")), ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  children.push(child)
  const out = { stdout: "", stderr: "" }
  child.stdout!.on("data", (d: Buffer) => (out.stdout += d.toString()))
  child.stderr!.on("data", (d: Buffer) => (out.stderr += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  /** Until `pattern` is printed: its match. */
  const printed = (pattern: RegExp, timeoutMs = 30_000) =>
    poll(() => `${pattern}; stdout: ${out.stdout}\nstderr: ${out.stderr}`, () => {
      if (child.exitCode !== null) throw new Error(`wes exited (${child.exitCode}): ${out.stderr}`)
      return pattern.exec(out.stdout) ?? undefined
    }, timeoutMs, 50)
  return { child, out, exited, printed }
}

describe("the wes command", () => {
  it("prints its usage, and refuses an unknown command with exit code 2", async () => {
    const help = wes(["--help"])
    expect(await help.exited).toBe(0)
    expect(help.out.stdout).toContain("Usage: wes serve")
    const bad = wes(["launch"])
    expect(await bad.exited).toBe(2)
    expect(bad.out.stderr).toContain("Unknown command: launch")
  })

  it("stops at start with a message naming a misconfigured variable", async () => {
    const run = wes(["serve"], { WES_RATE_LIMIT: "fast", WES_PORT: String(await freePort()) })
    expect(await run.exited).not.toBe(0)
    expect(run.out.stdout + run.out.stderr).toContain("WES_RATE_LIMIT")
  })

  it("logs \"wes serve listening\" with its port only once that port accepts connections", async () => {
    const port = await freePort()
    const run = wes(["serve"], { WES_PORT: String(port) })
    const [line] = await run.printed(/\{[^\n]*"msg":"wes serve listening"[^\n]*\}/)
    // No retry: the port is bound when the line is written.
    const health = await fetch(`http://127.0.0.1:${port}/healthz`)
    expect(health.status).toBe(200)
    expect(JSON.parse(line)).toMatchObject({ level: "info", msg: "wes serve listening", port, address: `http://127.0.0.1:${port}` })
    // SIGTERM (forwarded by tsx) rather than the SIGKILL of afterEach, which would orphan the server.
    run.child.kill("SIGTERM")
    expect(await run.exited).toBe(0)
  })

  it("in dev mode prints a working token and runs a workflow to an output file", async () => {
    const port = await freePort()
    const run = wes(["serve"], { WES_DEV: "1", WES_PORT: String(port) })
    const [, token] = await run.printed(/Demo token: (wes_[0-9A-Za-z]{42})/)
    const auth = { authorization: `Bearer ${token}` }
    const base = `http://127.0.0.1:${port}`
    // The workflow the banner writes to /tmp/wes-demo.json.
    const demo = /echo '(\{.*\})' > \/tmp\/wes-demo\.json/.exec(run.out.stdout)![1]!
    const form = new FormData()
    form.append("name", "demo")
    form.append("workflow_json", new Blob([demo]), "wes-demo.json")
    const created = await readJson<WorkflowSummaryJson>(await fetch(`${base}/v1/workflow`, { method: "POST", headers: auth, body: form }))
    let status = ""
    await poll(() => `the demo workflow to complete (is ${status})`, async () => {
      status = (await readJson<WorkflowDetailJson>(await fetch(`${base}/v1/workflow/${created.id}`, { headers: auth }))).status
      return status === "completed" ? true : undefined
    }, 20_000, 100)
    const { outputs } = await readJson<{ outputs: Array<{ id: string }> }>(await fetch(`${base}/v1/workflow/${created.id}/outputs`, { headers: auth }))
    const file = await fetch(`${base}/v1/workflow/${created.id}/outputs/${outputs[0]!.id}`, { headers: auth })
    expect(Array.from(new Uint8Array(await file.arrayBuffer()).slice(1, 4))).toEqual([80, 78, 71])
    expect(run.out.stdout).toContain('"msg":"request"')
    expect(run.out.stdout.split("\n").filter((l) => l.startsWith("{")).join("\n")).not.toContain(token)
  }, 60_000)

  it("shuts down gracefully on SIGTERM: event streams end, in-flight requests finish, then it exits", async () => {
    const port = await freePort()
    const run = wes(["serve"], { WES_DEV: "1", WES_PORT: String(port), WES_SHUTDOWN_GRACE: "10 seconds" })
    const [, token] = await run.printed(/Demo token: (wes_[0-9A-Za-z]{42})/)
    const auth = { authorization: `Bearer ${token}` }
    const base = `http://127.0.0.1:${port}`
    const demo = /echo '(\{.*\})' > \/tmp\/wes-demo\.json/.exec(run.out.stdout)![1]!.replace('"seconds":2', '"seconds":20')
    const form = new FormData()
    form.append("name", "long")
    form.append("workflow_json", new Blob([demo]), "wes-demo.json")
    const created = await readJson<WorkflowSummaryJson>(await fetch(`${base}/v1/workflow`, { method: "POST", headers: auth, body: form }))
    const sse = await fetch(`${base}/v1/workflow/${created.id}/subscribe`, { headers: auth })
    const sseText = sse.text()

    // An upload that is still streaming when the signal arrives.
    const boundary = "shutdown-test"
    const enc = new TextEncoder()
    let release!: () => void
    const released = new Promise<void>((r) => (release = r))
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(enc.encode(`--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nin-flight\r\n`))
        await released
        controller.enqueue(enc.encode(`--${boundary}\r\nContent-Disposition: form-data; name="workflow_json"; filename="w.json"\r\n\r\n${demo}\r\n--${boundary}--\r\n`))
        controller.close()
      }
    })
    const inFlight = fetch(`${base}/v1/workflow`, {
      method: "POST",
      headers: { ...auth, "content-type": `multipart/form-data; boundary=${boundary}` },
      body,
      duplex: "half"
    } as RequestInit)
    // real time: a child process; nothing it prints or serves says that the upload's headers reached it.
    await new Promise((r) => setTimeout(r, 300))

    const signalled = Date.now()
    run.child.kill("SIGTERM")
    // Event streams end first: the server is stopping, and the upload still in flight.
    await sseText
    release()
    expect((await inFlight).status).toBe(201)
    const code = await run.exited
    expect(code).toBe(0)
    expect(Date.now() - signalled).toBeLessThan(8_000)
    await expect(fetch(`${base}/healthz`)).rejects.toThrow()
  }, 60_000)
})
