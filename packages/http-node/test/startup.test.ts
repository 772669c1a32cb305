/**
 * Issue 18, item 2: the built `wes` command (dist/bin.js, as installed) at start-up and shutdown.
 * Every configuration or start-up failure is one JSON line naming the variable and the fix, with a
 * non-zero exit; an empty variable is unset; DATABASE_URL without WES_STORAGE is refused; `--help`
 * and `--version` answer; a signal logs `stopping` then `stopped`.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { createServer, type Server } from "node:net"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { afterEach, beforeAll, describe, expect, it } from "vitest"
import { until } from "./polling.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const bin = path.join(here, "..", "dist", "bin.js")

const children: Array<ChildProcess> = []
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL")
})

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })

/** Runs the built `wes <args>` with only these WES_ / DATABASE_ variables. */
const wes = (args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("WES_") && k !== "DATABASE_URL"))
  const child = spawn(process.execPath, [bin, ...args], { env: { ...base, ...env }, stdio: ["ignore", "pipe", "pipe"] })
  children.push(child)
  const out = { stdout: "", stderr: "" }
  child.stdout!.on("data", (d: Buffer) => (out.stdout += d.toString()))
  child.stderr!.on("data", (d: Buffer) => (out.stderr += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  /** Until `pattern` is printed. */
  const printed = (pattern: RegExp, timeoutMs = 20_000) =>
    until(() => `${pattern}; stdout: ${out.stdout}\nstderr: ${out.stderr}`, () => {
      if (child.exitCode !== null) throw new Error(`wes exited (${child.exitCode}): ${out.stdout} ${out.stderr}`)
      return pattern.test(out.stdout)
    }, timeoutMs, 50)
  return { child, out, exited, printed }
}

/** Everything printed is JSON lines; the one fatal line, parsed. */
const fatalLine = (stdout: string) => {
  const lines = stdout.split("\n").filter((l) => l !== "")
  for (const l of lines) expect(() => JSON.parse(l) as unknown, l).not.toThrow()
  const fatal = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l["level"] === "fatal")
  expect(fatal).toHaveLength(1)
  return fatal[0]!
}

describe("the built wes command", () => {
  beforeAll(() => {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run pnpm build first`)
  })

  it("answers --help, serve --help and --version without starting", async () => {
    for (const args of [["--help"], ["serve", "--help"]]) {
      const run = wes(args)
      expect([args, await run.exited]).toEqual([args, 0])
      expect(run.out.stdout).toContain("Usage: wes serve")
      expect(run.out.stdout).not.toContain("listening")
    }
    const version = wes(["--version"])
    expect(await version.exited).toBe(0)
    expect(version.out.stdout).toMatch(/^wes \d+\.\d+\.\d+\n$/)
  })

  it("stops with one JSON line naming the variable and the fix, exit code 1", async () => {
    const port = String(await freePort())
    const cases: ReadonlyArray<readonly [Record<string, string>, string, RegExp]> = [
      [{ WES_RATE_LIMIT: "fast" }, "WES_RATE_LIMIT", /WES_RATE_LIMIT must be/],
      [{ WES_TIER_LIMITS: "{not json" }, "WES_TIER_LIMITS", /invalid configuration/],
      [{ WES_ADMIN_TOKEN: "short" }, "WES_ADMIN_TOKEN", /at least 32 characters/],
      [{ DATABASE_URL: "postgres://127.0.0.1:5432/test" }, "WES_STORAGE", /DATABASE_URL is set but WES_STORAGE is not/],
      [{ WES_STORAGE: "postgres", DATABASE_URL: "notaurl" }, "DATABASE_URL", /cannot use the PostgreSQL store/]
    ]
    for (const [env, variable, msg] of cases) {
      const run = wes(["serve"], { WES_PORT: port, ...env })
      expect([env, await run.exited]).toEqual([env, 1])
      const line = fatalLine(run.out.stdout)
      expect([env, line["variable"], line["msg"]]).toEqual([env, variable, expect.stringMatching(msg)])
      expect(String(line["fix"]).length).toBeGreaterThan(10)
      // No stack trace, no schema dump.
      expect(run.out.stdout.length + run.out.stderr.length).toBeLessThan(1_000)
    }
  }, 60_000)

  it("adds one readable line on a terminal (run under script(1), which gives it a pseudo-terminal)", async () => {
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("WES_") && k !== "DATABASE_URL"))
    const child = spawn("script", ["-qec", `${JSON.stringify(process.execPath)} ${JSON.stringify(bin)} serve`, "/dev/null"], {
      env: { ...base, WES_RATE_LIMIT: "fast" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    children.push(child)
    let text = ""
    child.stdout!.on("data", (d: Buffer) => (text += d.toString()))
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve))
    expect(code).toBe(1)
    const readable = text.split(/\r?\n/).filter((l) => l.startsWith("wes serve: "))
    expect(readable).toEqual([expect.stringMatching(/^wes serve: invalid configuration \(WES_RATE_LIMIT\): .*; set WES_RATE_LIMIT to an accepted value/)])
  })

  it("names the port when it is in use", async () => {
    const taken: Server = await new Promise((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => resolve(s))
    })
    const port = (taken.address() as { port: number }).port
    try {
      const run = wes(["serve"], { WES_PORT: String(port) })
      expect(await run.exited).toBe(1)
      expect(fatalLine(run.out.stdout)).toMatchObject({ variable: "WES_PORT", msg: `cannot listen: port ${port} is already in use (EADDRINUSE)` })
    } finally {
      taken.close()
    }
  })

  it("treats an empty variable as unset, logs stopping and stopped on SIGTERM, exits 0", async () => {
    const port = await freePort()
    const run = wes(["serve"], { WES_PORT: String(port), WES_DEV: "", WES_RATE_LIMIT: "", WES_STORAGE: "", DATABASE_URL: "" })
    await run.printed(/"msg":"wes serve listening"/)
    run.child.kill("SIGTERM")
    expect(await run.exited).toBe(0)
    const messages = run.out.stdout.split("\n").filter((l) => l !== "").map((l) => (JSON.parse(l) as { msg: string }).msg)
    expect(messages.slice(-2)).toEqual(["stopping", "stopped"])
    expect(run.out.stdout).toContain("\"signal\":\"SIGTERM\"")
  })
})
