/**
 * Benchmark processes: servers and peers run as children so that the load generator never shares
 * their event loop. A child runs as production does: its script is bundled once per run with
 * esbuild (packages stay external, so `@wes/*` resolve to their built `dist`, as in a deployed
 * `wes serve`: run `pnpm build` first, which `pnpm bench` does) and started with plain node,
 * without a TypeScript loader in its memory. They talk over IPC: a child sends
 * `{type: "ready", ...}` once it listens, and answers `{id, cmd, args}` with `{id, result}` or
 * `{id, error}`.
 */
import { type ChildProcess, fork } from "node:child_process"
import * as fs from "node:fs"
import * as inspector from "node:inspector/promises"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { build } from "esbuild"

export const benchDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
export const repoRoot = path.resolve(benchDir, "..")
const outDir = path.join(benchDir, ".build")
const compiled = new Map<string, Promise<string>>()

/** The script bundled to plain JavaScript (once per run). */
const compile = (script: string): Promise<string> => {
  let out = compiled.get(script)
  if (out === undefined) {
    const file = path.join(outDir, script.replace(/\.ts$/, ".mjs"))
    out = build({
      entryPoints: [path.join(benchDir, script)],
      outfile: file,
      bundle: true,
      packages: "external",
      platform: "node",
      format: "esm",
      target: "node20",
      logLevel: "error"
    }).then(() => file)
    compiled.set(script, out)
  }
  return out
}

export interface Child<Ready> {
  readonly ready: Ready
  readonly process: ChildProcess
  readonly call: <A>(cmd: string, args?: unknown) => Promise<A>
  readonly stop: () => Promise<void>
  /** Lines the child wrote to stdout/stderr (the last 200). */
  readonly output: () => ReadonlyArray<string>
}

export const start = async <Ready>(script: string, env: Record<string, string> = {}, args: ReadonlyArray<string> = []): Promise<Child<Ready>> => {
  const child = fork(await compile(script), args, {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    // BENCH_PROFILE_DIR=<dir>: every child writes a CPU profile there (--cpu-prof).
    // BENCH_NODE_FLAGS in `env`: more node/V8 flags for this child only (a probe's knob).
    execArgv: [
      ...(env["BENCH_NODE_FLAGS"]?.split(" ").filter((f) => f !== "") ?? []),
      "--expose-gc",
      ...(process.env["BENCH_PROFILE_DIR"] ? ["--cpu-prof", `--cpu-prof-dir=${process.env["BENCH_PROFILE_DIR"]}`] : [])
    ],
    stdio: ["ignore", "pipe", "pipe", "ipc"]
  })
  const lines: Array<string> = []
  const keep = (d: Buffer) => {
    for (const line of d.toString().split("\n")) if (line !== "") lines.push(line)
    if (lines.length > 200) lines.splice(0, lines.length - 200)
  }
  child.stdout!.on("data", keep)
  child.stderr!.on("data", keep)
  let next = 0
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.on("message", (m: { type?: string; id?: number; result?: unknown; error?: string }) => {
      if (m.type === "ready") resolve(m as Ready)
      else if (m.id !== undefined) {
        const p = pending.get(m.id)
        pending.delete(m.id)
        if (m.error !== undefined) p?.reject(new Error(m.error))
        else p?.resolve(m.result)
      }
    })
    child.on("exit", (code) => reject(new Error(`${script} exited (${code}) before it was ready:\n${lines.slice(-30).join("\n")}`)))
  })
  return {
    ready,
    process: child,
    output: () => lines,
    call: <A>(cmd: string, args?: unknown) =>
      new Promise<A>((resolve, reject) => {
        const id = next++
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject })
        child.send({ id, cmd, args })
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve()
        const timer = setTimeout(() => child.kill("SIGKILL"), 10_000)
        child.on("exit", () => {
          clearTimeout(timer)
          resolve()
        })
        child.kill("SIGTERM")
      })
  }
}

let session: inspector.Session | undefined

/** This process's inspector session, connected (profiles of a phase of a benchmark). */
export const inspectorSession = (): inspector.Session => {
  session ??= new inspector.Session()
  session.connect()
  return session
}

/** Stops what `stop` stops, writes its profile as `args.path` and disconnects; answers the path. */
export const stopInto = async (args: unknown, stop: (session: inspector.Session) => Promise<unknown>) => {
  if (session === undefined) throw new Error("nothing was started")
  const { path } = args as { readonly path: string }
  fs.writeFileSync(path, JSON.stringify(await stop(session)))
  session.disconnect()
  return path
}

/**
 * Commands every child answers: its CPU time so far (µs, user + system), and a CPU profile of a
 * phase (`profileStart`, then `profileStop` with `{ path }`: written there as a .cpuprofile for
 * Chrome's DevTools).
 */
const builtins: Record<string, (args: unknown) => unknown> = {
  cpu: () => {
    const u = process.cpuUsage()
    return u.user + u.system
  },
  profileStart: async () => {
    const s = inspectorSession()
    await s.post("Profiler.enable")
    await s.post("Profiler.start")
    return true
  },
  profileStop: (args) => stopInto(args, async (s) => (await s.post("Profiler.stop")).profile)
}

/** In a child: answers the parent's commands with `handlers` (and `cpu`), then reports ready. */
export const serve = (handlers: Record<string, (args: unknown) => unknown>, ready: Record<string, unknown>): void => {
  process.on("message", async (m: { id: number; cmd: string; args: unknown }) => {
    try {
      const handler = handlers[m.cmd] ?? builtins[m.cmd]
      if (handler === undefined) throw new Error(`unknown command ${m.cmd}`)
      process.send!({ id: m.id, result: await handler(m.args) })
    } catch (e) {
      process.send!({ id: m.id, error: e instanceof Error ? e.stack ?? e.message : String(e) })
    }
  })
  process.send!({ type: "ready", ...ready })
}
