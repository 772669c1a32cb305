#!/usr/bin/env node
/**
 * `wes-agent`: see docs/operating-runners.md, "Runners behind NAT". Parses the command line
 * (`Cli.ts`), starts the agent and runs until SIGTERM or SIGINT, then closes its connection.
 * A bad configuration is one line on stderr and exit code 2.
 */
import { startAgent } from "./Agent.js"
import { CliError, parseCommand, USAGE } from "./Cli.js"
import { describe, stderrLog } from "./Log.js"
import { AGENT_VERSION } from "./Status.js"

const main = async (): Promise<void> => {
  const command = parseCommand(process.argv.slice(2), process.env)
  if (command._tag === "help") return void process.stdout.write(USAGE)
  if (command._tag === "version") return void process.stdout.write(`wes-agent ${AGENT_VERSION}\n`)
  const { options } = command
  if (options.server.protocol === "http:" && !["localhost", "127.0.0.1", "[::1]"].includes(options.server.hostname)) {
    stderrLog("warn", `--server is http://: the runner token and everything WES sends cross the network unencrypted; use https://`)
  }
  stderrLog("info", `wes-agent ${AGENT_VERSION}: ComfyUI at ${options.comfyui.origin}, WES at ${options.server.origin}, cleanup ${options.cleanup ? "on" : "off"}`)
  const agent = await startAgent(options)
  await new Promise<void>((resolve) => {
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      process.once(signal, () => {
        stderrLog("info", `${signal}: stopping`)
        resolve()
      })
    }
  })
  await agent.close()
}

main().catch((e: unknown) => {
  if (e instanceof CliError) process.stderr.write(`wes-agent: ${e.message}\n`)
  else process.stderr.write(`wes-agent: ${describe(e)}\n`)
  process.exitCode = e instanceof CliError ? 2 : 1
})
