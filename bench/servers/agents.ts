/**
 * `wes-agent`s for benchmarks (B12), in their own process: one in-process agent (`startAgent`,
 * what the `wes-agent` command runs) per entry of AGENTS (JSON `[{comfyui, token}]`), all dialling
 * WES at AGENTS_SERVER. No folders (the fakes are not on a ComfyUI install) and cleanup off: they
 * carry the work a direct runner does, through the tunnel. Their log lines are kept (the child's
 * output) but not printed. IPC: connected (how many are connected now), and every child's `cpu`.
 */
import { type AgentHandle, startAgent } from "@wes/runner-agent"
import { serve } from "../lib/child.js"

const entries = JSON.parse(process.env["AGENTS"] ?? "[]") as ReadonlyArray<{ readonly comfyui: string; readonly token: string }>
const server = new URL(process.env["AGENTS_SERVER"] ?? "http://127.0.0.1:8080")
const lines: Array<string> = []

const agents: Array<AgentHandle> = []
for (const entry of entries) {
  agents.push(await startAgent({
    comfyui: new URL(entry.comfyui),
    server,
    token: entry.token,
    folders: { comfyui: null, models: null, output: null, temp: null, input: null },
    modelBudgetBytes: null,
    cleanup: false,
    allowPrivateModelUrls: false,
    log: (level, message) => {
      lines.push(`${level} ${message}`)
      if (lines.length > 200) lines.splice(0, lines.length - 200)
    }
  }))
}
serve({
  connected: () => agents.filter((a) => a.connected()).length,
  log: () => lines.slice()
}, {})
process.on("SIGTERM", () =>
  void Promise.all(agents.map((a) => a.close())).then(() => process.exit(0)))
