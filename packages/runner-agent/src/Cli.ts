/**
 * The `wes-agent` command line: flags, their `WES_AGENT_*` environment equivalents (a flag wins),
 * and the runner token from `WES_RUNNER_TOKEN` only (never argv, where `ps` shows it to every
 * user of the machine). Everything wrong is reported as one line naming the flag and what it
 * expects; nothing is started on a bad configuration.
 */
import * as path from "node:path"
import { parseArgs } from "node:util"
import { RUNNER_TOKEN_PREFIX } from "@wes/runner-client/agent-protocol"
import { type AgentFolders, type AgentOptions, resolveFolders } from "./Options.js"
import { parseByteSize } from "./Size.js"

export const USAGE = `Usage: wes-agent --comfyui http://127.0.0.1:8188 --server https://wes.example.com [options]

Runs beside a ComfyUI and dials out to WES over one WebSocket, so WES can drive this ComfyUI
without any inbound port. The runner token is read from WES_RUNNER_TOKEN (never from a flag).

Options (each also as an environment variable, shown in brackets; a flag wins):
  --comfyui URL                 ComfyUI's http:// address, the only one the agent connects to [WES_AGENT_COMFYUI]
  --server URL                  WES's base URL (https:// in production) [WES_AGENT_SERVER]
  --comfyui-dir DIR             ComfyUI's folder; the four below default to DIR/models|output|temp|input [WES_AGENT_COMFYUI_DIR]
  --models-dir DIR              where model files are placed [WES_AGENT_MODELS_DIR]
  --output-dir DIR              ComfyUI's output folder [WES_AGENT_OUTPUT_DIR]
  --temp-dir DIR                ComfyUI's temp folder [WES_AGENT_TEMP_DIR]
  --input-dir DIR               ComfyUI's input folder [WES_AGENT_INPUT_DIR]
  --model-budget SIZE           disk budget for placed models, e.g. 200GB, 1.5TiB; unbounded if unset [WES_AGENT_MODEL_BUDGET]
  --cleanup on|off              delete a run's files once WES holds them (default on) [WES_AGENT_CLEANUP]
  --allow-private-model-urls    let model URLs name private or loopback addresses [WES_AGENT_ALLOW_PRIVATE_MODEL_URLS=true]
  --help                        print this
  --version                     print the version
`

/** A configuration the agent cannot start with; its message is the one line printed. */
export class CliError extends Error {
  readonly _tag = "CliError"
}

export type Command =
  | { readonly _tag: "help" }
  | { readonly _tag: "version" }
  | { readonly _tag: "run"; readonly options: AgentOptions }

const STRING_FLAGS = ["comfyui", "server", "comfyui-dir", "models-dir", "output-dir", "temp-dir", "input-dir", "model-budget", "cleanup"] as const
type StringFlag = typeof STRING_FLAGS[number]
const FOLDER_FLAG_NAMES = [
  ["comfyui", "comfyui-dir"], ["models", "models-dir"], ["output", "output-dir"], ["temp", "temp-dir"], ["input", "input-dir"]
] as const satisfies ReadonlyArray<readonly [keyof AgentFolders, StringFlag]>

const envName = (flag: string) => `WES_AGENT_${flag.toUpperCase().replaceAll("-", "_")}`

const parseFlags = (argv: ReadonlyArray<string>) => {
  try {
    return parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        ...Object.fromEntries(STRING_FLAGS.map((f) => [f, { type: "string" as const }])),
        "allow-private-model-urls": { type: "boolean" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "v" }
      }
    }).values as Partial<Record<StringFlag, string>> & { "allow-private-model-urls"?: boolean; help?: boolean; version?: boolean }
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e)
    const named = /'([^']+)'/.exec(message)?.[1] ?? ""
    const code = (e as { code?: string }).code
    if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") throw new CliError(`unknown flag ${named} (see wes-agent --help)`)
    if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") throw new CliError(`unexpected argument ${named} (see wes-agent --help)`)
    if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") throw new CliError(`${named.split(" ")[0] ?? "a flag"} needs a value (see wes-agent --help)`)
    throw new CliError(`${message.split("\n")[0]} (see wes-agent --help)`)
  }
}

const httpUrl = (flag: string, value: string | undefined): URL => {
  if (value === undefined) throw new CliError(`--${flag} is required (or ${envName(flag)}); see wes-agent --help`)
  if (!URL.canParse(value)) throw new CliError(`--${flag} must be an http:// or https:// URL, got ${JSON.stringify(value)}`)
  const url = new URL(value)
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new CliError(`--${flag} must be an http:// or https:// URL, got ${JSON.stringify(value)}`)
  }
  return url
}

/** Parses the command line and environment, or throws CliError. */
export const parseCommand = (argv: ReadonlyArray<string>, env: NodeJS.ProcessEnv): Command => {
  const flags = parseFlags(argv)
  if (flags.help === true) return { _tag: "help" }
  if (flags.version === true) return { _tag: "version" }
  const value = (flag: StringFlag): string | undefined => {
    const v = flags[flag] ?? env[envName(flag)]
    return v === undefined || v === "" ? undefined : v
  }
  const comfyui = httpUrl("comfyui", value("comfyui"))
  if (comfyui.protocol !== "http:") {
    throw new CliError("--comfyui must be an http:// URL: point the agent at ComfyUI's own port on this machine, not a TLS proxy")
  }
  const server = httpUrl("server", value("server"))
  const token = env.WES_RUNNER_TOKEN ?? ""
  if (token === "") throw new CliError("WES_RUNNER_TOKEN is not set: put the runner's token (wes_rt_...) in the environment")
  if (!token.startsWith(RUNNER_TOKEN_PREFIX)) {
    throw new CliError(`WES_RUNNER_TOKEN is not a runner token (runner tokens start with ${RUNNER_TOKEN_PREFIX})`)
  }
  const budget = value("model-budget")
  const modelBudgetBytes = budget === undefined ? null : parseByteSize(budget)
  if (modelBudgetBytes === undefined) throw new CliError(`--model-budget must be a size such as 200GB or 1.5TiB, got ${JSON.stringify(budget)}`)
  const cleanup = value("cleanup") ?? "on"
  if (cleanup !== "on" && cleanup !== "off") throw new CliError(`--cleanup must be on or off, got ${JSON.stringify(cleanup)}`)
  const allowEnv = env.WES_AGENT_ALLOW_PRIVATE_MODEL_URLS ?? ""
  if (!["", "true", "false"].includes(allowEnv)) {
    throw new CliError(`WES_AGENT_ALLOW_PRIVATE_MODEL_URLS must be true or false, got ${JSON.stringify(allowEnv)}`)
  }
  const given: { -readonly [K in keyof AgentFolders]?: string } = {}
  for (const [key, flag] of FOLDER_FLAG_NAMES) {
    const v = value(flag)
    if (v !== undefined) given[key] = path.resolve(v)
  }
  const folders = resolveFolders(given)
  return {
    _tag: "run",
    options: {
      comfyui,
      server,
      token,
      folders,
      modelBudgetBytes,
      cleanup: cleanup === "on",
      allowPrivateModelUrls: flags["allow-private-model-urls"] === true || allowEnv === "true"
    }
  }
}
