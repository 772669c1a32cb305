/**
 * The system under test, as a person starts it: `wes serve` with WES_DEV=1 (memory store, the
 * simulated ComfyUI, the demo user) in a child process, its banner read for the dashboard's
 * address and the demo token; and Debian's Chromium through playwright-core.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { createServer } from "node:net"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { type Browser, chromium } from "playwright-core"

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..")

/** Builds the dashboard from its sources (what `pnpm build` does for it). */
export const buildDashboard = (): void => {
  execFileSync(process.execPath, [path.join(root, "packages/dashboard/build.mjs")], { stdio: "pipe" })
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const address = s.address()
      s.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))))
    })
  })

/** The operator token of the server under test (the operator API revokes tokens). */
export const ADMIN_TOKEN = "dashboard-test-admin-token-0123456789abcdef"

export interface DevServer {
  readonly dashboard: string
  readonly token: string
  readonly banner: string
  readonly stop: () => Promise<void>
}

/** Starts `WES_DEV=1 wes serve`, with `env` added to its environment. */
export const startDevServer = async (env: Readonly<Record<string, string>> = {}): Promise<DevServer> => {
  const port = await freePort()
  const child: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", "--conditions=@wes/source", path.join(root, "packages/http-node/src/bin.ts"), "serve"],
    { cwd: root, env: { ...process.env, WES_DEV: "1", WES_PORT: String(port), WES_RATE_LIMIT: "off", WES_ADMIN_TOKEN: ADMIN_TOKEN, ...env }, stdio: ["ignore", "pipe", "pipe"] }
  )
  let out = ""
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const banner = await new Promise<string>((resolve, reject) => {
    child.stdout!.on("data", (chunk: Buffer) => {
      if (out.length > 1_000_000) return
      out += chunk.toString()
      if (/Dashboard: \S+/.test(out) && /Demo token: \S+/.test(out)) resolve(out)
    })
    child.stderr!.on("data", (chunk: Buffer) => void (out += chunk.toString()))
    child.once("exit", (code) => reject(new Error(`wes serve exited (${code}) before its banner:\n${out}`)))
  })
  return {
    banner,
    dashboard: /Dashboard: (\S+)/.exec(banner)![1]!,
    token: /Demo token: (\S+)/.exec(banner)![1]!,
    stop: async () => {
      child.kill("SIGTERM")
      await exited
    }
  }
}

export const launchChromium = (): Promise<Browser> =>
  chromium.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
  })
