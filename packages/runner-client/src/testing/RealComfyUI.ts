/**
 * An unmodified ComfyUI for integration tests, installed and started by a setup script with the
 * interface of `shared/comfyui/setup.sh` (`install DIR`; `start DIR PORT` prints the pid once
 * `/system_stats` answers, the log goes to `DIR/comfyui-PORT.log`; `COMFYUI_VERSION` picks the
 * version, `COMFYUI_EXTRA_ARGS` adds ComfyUI flags). Each instance runs on a free
 * port of 127.0.0.1; `kill` and `restart` reproduce a crash, `close` stops it for good. No
 * ComfyUI outlives the process that started it: they are killed when it exits, a detached
 * watchdog kills each one within a second of that process dying by a signal (ComfyUI runs in
 * the background of the start script, in a process group of its own, so Ctrl-C does not reach
 * it), and each pid is written to `pidDir` (when given) for a test runner's teardown.
 *
 * Starting takes about 8 s on this kind of machine (2 CPU cores); installing the first time, 1-4 min.
 */
import { execFile, spawn } from "node:child_process"
import * as fs from "node:fs"
import { createServer } from "node:net"
import * as os from "node:os"
import * as path from "node:path"

/** Where ComfyUI comes from: the setup script, the version it installs and the directory it installs into. */
export interface ComfyUISetup {
  readonly script: string
  /** `COMFYUI_VERSION` of the setup script ("0.3.64", "0.3.45"). */
  readonly version: string
  readonly dir: string
  /** Where each started pid is recorded as an empty file named after it (optional). */
  readonly pidDir?: string | undefined
}

/** The version the setup script installs when none is named; it alone lives in the base directory. */
export const DEFAULT_COMFYUI_VERSION = "0.3.64"

/**
 * `<root>/../shared/comfyui/setup.sh` (the machine's ComfyUI source lives beside the clone) for
 * `version`, installed in `$WES_COMFYUI_DIR` (default `~/.cache/wes-comfyui`) for the default
 * version and beside it, in `<that directory>-<version>`, for any other; undefined when there is no script.
 */
export const locateComfyUISetup = (
  root: string,
  version: string = DEFAULT_COMFYUI_VERSION,
  env: NodeJS.ProcessEnv = process.env
): ComfyUISetup | undefined => {
  const script = path.resolve(root, "..", "shared", "comfyui", "setup.sh")
  if (!fs.existsSync(script)) return undefined
  const base = env["WES_COMFYUI_DIR"] ?? path.join(os.homedir(), ".cache", "wes-comfyui")
  return { script, version, dir: version === DEFAULT_COMFYUI_VERSION ? base : `${base}-${version}` }
}

/** The setup script's environment: the version, and ComfyUI's extra flags (no others leak in). */
const scriptEnv = (setup: ComfyUISetup, args: ReadonlyArray<string>): NodeJS.ProcessEnv => {
  const blank = args.find((a) => a === "" || /\s/.test(a))
  if (blank !== undefined) throw new Error(`ComfyUI argument ${JSON.stringify(blank)}: setup.sh splits COMFYUI_EXTRA_ARGS at spaces`)
  return { ...process.env, COMFYUI_VERSION: setup.version, COMFYUI_EXTRA_ARGS: args.join(" ") }
}

const failure = (script: string, args: ReadonlyArray<string>, why: string, stderr: string) =>
  new Error(`${path.basename(script)} ${args.join(" ")} failed (${why}):\n${stderr.slice(-3000)}`)

const run = (script: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<string> =>
  new Promise((resolve, reject) => {
    execFile("bash", [script, ...args], { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error === null) resolve(stdout)
      else reject(failure(script, args, error.message, stderr))
    })
  })

/**
 * A detached shell that waits while both this process and the process group `group` live, and
 * kills the group if this process is gone first (a once-a-second check: a watchdog, not a
 * synchronisation).
 */
const watchdog = (group: number): void => {
  const script = `while kill -s 0 ${process.pid} 2>/dev/null && kill -s 0 -- -${group} 2>/dev/null; do sleep 1; done; ` +
    `kill -s 0 ${process.pid} 2>/dev/null || kill -s KILL -- -${group} 2>/dev/null`
  spawn("sh", ["-c", script], { detached: true, stdio: "ignore" }).unref()
}

/**
 * `setup.sh start` in a process group of its own, which the ComfyUI it starts in the background
 * joins: signals to the test's group (Ctrl-C) do not reach it, and a watchdog kills the group if
 * this process dies, from the first moment (ComfyUI exists seconds before the script prints its pid).
 */
const startDetached = (script: string, args: ReadonlyArray<string>, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<string> =>
  new Promise((resolve, reject) => {
    const child = spawn("bash", [script, ...args], { env, detached: true, stdio: ["ignore", "pipe", "pipe"] })
    if (child.pid !== undefined) watchdog(child.pid)
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()))
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()))
    const timer = setTimeout(() => {
      if (child.pid !== undefined) signal(-child.pid, "SIGKILL")
    }, timeoutMs)
    child.on("error", (e) => reject(failure(script, args, e.message, stderr)))
    child.on("close", (code, sig) => {
      clearTimeout(timer)
      if (code === 0) resolve(stdout)
      else reject(failure(script, args, sig ?? `exit ${code}`, stderr))
    })
  })

/** Installs ComfyUI `setup.version` into `setup.dir` (does nothing when it is installed already). */
export const installComfyUI = async (setup: ComfyUISetup): Promise<void> => {
  await run(setup.script, ["install", setup.dir], scriptEnv(setup, []), 15 * 60_000)
}

/** The flags that load ComfyUI's bundled `SaveImageWebsocket` node (custom nodes are disabled by the setup script). */
export const WEBSOCKET_IMAGE_SAVE: ReadonlyArray<string> = ["--whitelist-custom-nodes", "websocket_image_save.py"]

/** How one ComfyUI is started. */
export interface RealComfyUIOptions {
  /**
   * More ComfyUI flags, one word each, e.g. `["--whitelist-custom-nodes", "websocket_image_save.py"]`
   * to load its bundled SaveImageWebsocket node (kept on `restart`).
   */
  readonly args?: ReadonlyArray<string>
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer()
    s.once("error", reject)
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
  })

/** Whether `pid` is a live process (a zombie counts as gone). */
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8"))
  } catch {
    return true
  }
}

const signal = (pid: number, sig: NodeJS.Signals): void => {
  try {
    process.kill(pid, sig)
  } catch {
    // already gone
  }
}

/** Waits until `pid` is gone; false if it is still there after `timeoutMs`. */
const gone = async (pid: number, timeoutMs: number): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs
  while (alive(pid)) {
    if (Date.now() > deadline) return false
    await new Promise((r) => setTimeout(r, 50))
  }
  return true
}

const running = new Set<number>()
process.once("exit", () => {
  for (const pid of running) signal(pid, "SIGKILL")
})

/** Kills every ComfyUI whose pid `pidDir` records (a teardown's safety net); returns how many were alive. */
export const killRecorded = async (pidDir: string): Promise<number> => {
  let killed = 0
  for (const name of fs.existsSync(pidDir) ? fs.readdirSync(pidDir) : []) {
    const pid = Number(name)
    if (!Number.isInteger(pid) || !alive(pid)) continue
    const cmdline = fs.existsSync(`/proc/${pid}/cmdline`) ? fs.readFileSync(`/proc/${pid}/cmdline`, "utf8") : ""
    if (!cmdline.includes("main.py")) continue
    signal(pid, "SIGKILL")
    await gone(pid, 5_000)
    killed++
  }
  return killed
}

export class RealComfyUI {
  private constructor(
    private readonly setup: ComfyUISetup,
    private readonly env: NodeJS.ProcessEnv,
    readonly port: number,
    private current: number | undefined
  ) {}

  /**
   * Starts ComfyUI on a free port (another port if the chosen one is taken meanwhile); fails if it
   * is not `setup.version`.
   */
  static async start(setup: ComfyUISetup, options: RealComfyUIOptions = {}): Promise<RealComfyUI> {
    const env = scriptEnv(setup, options.args ?? [])
    for (let attempt = 1; ; attempt++) {
      const port = await freePort()
      const comfy = new RealComfyUI(setup, env, port, undefined)
      try {
        await comfy.launch()
        return comfy
      } catch (e) {
        if (attempt >= 3 || !String(e).includes("already in use")) throw e
      }
    }
  }

  /** The ComfyUI version running (`setup.version`: each start checks `/system_stats` says so). */
  get version(): string {
    return this.setup.version
  }

  /** `http://127.0.0.1:<port>`. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`
  }

  /** The pid of the running process (undefined while stopped). */
  get pid(): number | undefined {
    return this.current
  }

  get logFile(): string {
    return path.join(this.setup.dir, `comfyui-${this.port}.log`)
  }

  /** ComfyUI's log since its last start (the start script truncates it). */
  log(): string {
    return fs.existsSync(this.logFile) ? fs.readFileSync(this.logFile, "utf8") : ""
  }

  /** `POST /prompt` requests received since the last start (ComfyUI logs "got prompt" for each). */
  promptsReceived(): number {
    return this.log().split("\n").filter((l) => l.includes("got prompt")).length
  }

  private async launch(): Promise<void> {
    const out = await startDetached(this.setup.script, ["start", this.setup.dir, String(this.port)], this.env, 5 * 60_000)
    const pid = Number(out.trim().split("\n").at(-1))
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`setup.sh start printed no pid: ${out}`)
    this.current = pid
    running.add(pid)
    if (this.setup.pidDir !== undefined) {
      fs.mkdirSync(this.setup.pidDir, { recursive: true })
      fs.writeFileSync(path.join(this.setup.pidDir, String(pid)), "")
    }
    const stats = await (await fetch(`${this.url}/system_stats`)).json() as { system?: { comfyui_version?: unknown } }
    const version = stats.system?.comfyui_version
    if (version !== this.setup.version) {
      await this.stop("SIGKILL")
      throw new Error(`${this.setup.dir} runs ComfyUI ${String(version)}, not ${this.setup.version}`)
    }
  }

  private async stop(sig: NodeJS.Signals): Promise<void> {
    const pid = this.current
    if (pid === undefined) return
    signal(pid, sig)
    if (!(await gone(pid, 10_000))) {
      signal(pid, "SIGKILL")
      await gone(pid, 10_000)
    }
    running.delete(pid)
    if (this.setup.pidDir !== undefined) fs.rmSync(path.join(this.setup.pidDir, String(pid)), { force: true })
    this.current = undefined
  }

  /** Kills the process at once (SIGKILL), as a crash would: its queue and history are lost. */
  kill(): Promise<void> {
    return this.stop("SIGKILL")
  }

  /** Starts it again on the same port (after `kill`). */
  async restart(): Promise<void> {
    await this.stop("SIGKILL")
    await this.launch()
  }

  /** Stops it for good (SIGTERM, SIGKILL after 10 s). */
  close(): Promise<void> {
    return this.stop("SIGTERM")
  }
}
