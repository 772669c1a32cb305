/**
 * `wes-agent` in the end-to-end tests of issue 34, as an operator runs it: a child process started
 * from the sources (node with tsx's loader, like the `wes serve` children of instances.ts) beside
 * a ComfyUI, given WES's address and its runner token (in the environment), killed by signals.
 * Also the user's side of an agent runner over WES's HTTP API (create it with `connection:
 * "agent"`, issue and revoke its token), and a bare WebSocket handshake on the agent endpoint, to
 * see what WES answers a token without an agent's behaviour in between.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as http from "node:http"
import * as path from "node:path"
import { fileURLToPath } from "node:url"
import { json, readJson, type RunnerJson } from "./harness.js"
import type { Instance, TestDatabase, TestUser } from "./instances.js"
import { poll } from "./polling.js"

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, "../../..")
const agentBin = path.join(root, "packages", "runner-agent", "src", "bin.ts")

/** The agent endpoint and its subprotocol (packages/runner-client/src/AgentProtocol.ts). */
export const AGENT_CONNECT_PATH = "/agent/v1/connect"
export const AGENT_SUBPROTOCOL = "wes-agent.h2.v1"
export const CLOSE_TOKEN_REVOKED = 4401

/** One `wes-agent` child process. */
export interface AgentProcess {
  readonly child: ChildProcess
  readonly pid: number
  readonly out: { stdout: string; stderr: string }
  readonly exited: Promise<number | null>
  /** Its output so far (for failure messages). */
  readonly output: () => string
  /** SIGKILL, as a crash or a pulled plug: no goodbye reaches WES. */
  readonly kill: () => Promise<void>
}

export interface AgentOptions {
  /** WES's base URL (`http://127.0.0.1:<port>`). */
  readonly server: string
  /** The ComfyUI beside it. */
  readonly comfyui: string
  readonly token: string
  /** ComfyUI's install directory (its output, temp and input folders inside): enables cleanup. */
  readonly comfyuiDir?: string | undefined
  readonly env?: Readonly<Record<string, string>> | undefined
}

const agents = new Set<ChildProcess>()
process.once("exit", () => {
  for (const c of agents) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL")
})

const live = (c: ChildProcess) => c.exitCode === null && c.signalCode === null

const killed = (c: ChildProcess): Promise<void> =>
  live(c)
    ? new Promise<void>((resolve) => {
      c.once("exit", () => resolve())
      c.kill("SIGKILL")
    })
    : Promise.resolve()

/** Kills every agent still running (a test's teardown). */
export const killAgents = async (): Promise<void> => {
  await Promise.all([...agents].map(killed))
  agents.clear()
}

/** Starts `wes-agent --comfyui <comfyui> --server <server> [--comfyui-dir <dir>]` with WES_RUNNER_TOKEN set. */
export const startAgentProcess = (options: AgentOptions): AgentProcess => {
  const args = ["--comfyui", options.comfyui, "--server", options.server]
  if (options.comfyuiDir !== undefined) args.push("--comfyui-dir", options.comfyuiDir)
  // node itself with tsx's loader (not the tsx wrapper): a SIGKILL kills the agent, not a wrapper.
  const child = spawn(process.execPath, ["--import", "tsx", "--conditions=@wes/source", agentBin, ...args], {
    cwd: root,
    env: { ...process.env, WES_RUNNER_TOKEN: options.token, ...options.env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  agents.add(child)
  const out = { stdout: "", stderr: "" }
  child.stdout!.on("data", (d: Buffer) => (out.stdout += d.toString()))
  child.stderr!.on("data", (d: Buffer) => (out.stderr += d.toString()))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)))
  return {
    child,
    pid: child.pid!,
    out,
    exited,
    output: () => `agent stdout: ${out.stdout.slice(-3000)}\nagent stderr: ${out.stderr.slice(-3000)}`,
    kill: () => killed(child)
  }
}

/** A runner of `user` reached through an agent: WES is never told where its ComfyUI is. */
export const addAgentRunner = async (instance: Instance, user: TestUser, name: string, tags: ReadonlyArray<string> = []): Promise<RunnerJson> => {
  const res = await instance.fetch("/v1/runner", json({ name, connection: "agent", tags }, user.auth))
  if (res.status !== 201) throw new Error(`addAgentRunner: ${res.status} ${await res.text()}`)
  return readJson<RunnerJson>(res)
}

export interface IssuedRunnerToken {
  readonly id: string
  readonly token: string
}

/** `POST /v1/runner/{id}/agent-token`: a runner token, shown this once. */
export const issueRunnerToken = async (instance: Instance, user: TestUser, runnerId: string): Promise<IssuedRunnerToken> => {
  const res = await instance.fetch(`/v1/runner/${runnerId}/agent-token`, json({}, user.auth))
  if (res.status !== 201) throw new Error(`issueRunnerToken: ${res.status} ${await res.text()}`)
  return readJson<IssuedRunnerToken>(res)
}

/** Revokes a runner token (its owner's `DELETE /v1/runner/{id}/agent-token/{token_id}`). */
export const revokeRunnerToken = async (instance: Instance, user: TestUser, runnerId: string, tokenId: string): Promise<void> => {
  const res = await instance.fetch(`/v1/runner/${runnerId}/agent-token/${tokenId}`, { method: "DELETE", headers: user.auth })
  if (res.status !== 204) throw new Error(`revokeRunnerToken: ${res.status} ${await res.text()}`)
}

/** The runner as its owner sees it (`GET /v1/runner/{id}`), with the agent's part when there is one. */
export const runnerDetail = async (instance: Instance, user: TestUser, runnerId: string) =>
  readJson<RunnerJson & { readonly agent?: { readonly connected?: boolean } | null }>(
    await instance.fetch(`/v1/runner/${runnerId}`, { headers: user.auth })
  )

/** Waits until the runner's detail on `instance` says its agent is connected (or not, with `connected: false`); `context` adds to a timeout's message. */
export const awaitAgent = (
  instance: Instance,
  user: TestUser,
  runnerId: string,
  connected = true,
  timeoutMs = 30_000,
  context: string | (() => string) = ""
) =>
  poll(() => `runner ${runnerId}'s agent to be ${connected ? "connected" : "disconnected"} on ${instance.name}; ${typeof context === "string" ? context : context()}`, async () =>
    (await runnerDetail(instance, user, runnerId)).agent?.connected === connected ? true : undefined, timeoutMs, 50)

/** What WES answered a WebSocket handshake on the agent endpoint: the HTTP status, 101 when it upgraded. */
export interface Handshake {
  readonly status: number
  /** The upgraded socket (status 101), for the caller to watch or close. */
  readonly socket?: import("node:net").Socket | undefined
}

/**
 * A bare WebSocket handshake on the agent endpoint with `authorization` (none when undefined):
 * resolves with WES's answer without speaking anything after it.
 */
export const agentHandshake = (base: string, authorization: string | undefined): Promise<Handshake> =>
  new Promise((resolve, reject) => {
    const req = http.request(`${base}${AGENT_CONNECT_PATH}`, {
      headers: {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("base64"),
        "sec-websocket-protocol": AGENT_SUBPROTOCOL,
        ...(authorization === undefined ? {} : { authorization })
      }
    })
    req.on("upgrade", (res, socket) => resolve({ status: res.statusCode ?? 101, socket }))
    req.on("response", (res) => {
      res.resume()
      resolve({ status: res.statusCode ?? 0 })
    })
    req.on("error", reject)
    req.end()
  })

/** A runner's agent presence row (PostgreSQL): the instance holding its agent's connection, and whether that is live. */
export const agentPresence = async (database: TestDatabase, runnerId: string): Promise<{ readonly owner: string; readonly live: boolean } | undefined> => {
  const rows = await database.query((sql) =>
    sql<{ owner: string; live: boolean }>`SELECT owner, expires_at > now() AS live FROM agent_presence WHERE runner_id = ${runnerId}`
  )
  return rows[0]
}
