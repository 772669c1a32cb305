/**
 * What one `wes-agent` is configured with, as the command line and environment give it
 * (`Cli.ts` parses them; tests build it directly). The folders are ComfyUI's own: where models,
 * outputs, temp files and uploaded inputs live; each is null when neither its flag nor
 * `--comfyui-dir` names it, and the parts that need it (provisioning, cleanup) then answer with
 * an error saying which flag is missing instead of guessing a path.
 */
import * as path from "node:path"

export interface AgentFolders {
  readonly comfyui: string | null
  readonly models: string | null
  readonly output: string | null
  readonly temp: string | null
  readonly input: string | null
}

export interface AgentOptions {
  /** ComfyUI's base URL (`http://127.0.0.1:8188`): the only address the agent tunnels to. */
  readonly comfyui: URL
  /** WES's base URL (`https://wes.example.com`); the agent dials `AGENT_CONNECT_PATH` on it. */
  readonly server: URL
  /** The runner token (`wes_rt_...`), from `WES_RUNNER_TOKEN` only. */
  readonly token: string
  readonly folders: AgentFolders
  /** Disk budget for the model files the agent places, in bytes; null: unbounded. */
  readonly modelBudgetBytes: number | null
  /** Whether a run's files are deleted from ComfyUI's folders when WES asks. */
  readonly cleanup: boolean
  /** Whether model URLs may name private or loopback addresses (off: refused). */
  readonly allowPrivateModelUrls: boolean
}

/** `<comfyui-dir>/models|output|temp|input` unless given one by one. */
export const resolveFolders = (given: Partial<AgentFolders>): AgentFolders => {
  const comfyui = given.comfyui ?? null
  const under = (name: string): string | null => (comfyui === null ? null : path.join(comfyui, name))
  return {
    comfyui,
    models: given.models ?? under("models"),
    output: given.output ?? under("output"),
    temp: given.temp ?? under("temp"),
    input: given.input ?? under("input")
  }
}

/** The flag that names a folder, for error messages. */
export const FOLDER_FLAGS: Record<Exclude<keyof AgentFolders, "comfyui">, string> = {
  models: "--models-dir",
  output: "--output-dir",
  temp: "--temp-dir",
  input: "--input-dir"
}

/** Thrown by `folderOf` when a folder the request needs was never configured. */
export class FolderNotConfigured extends Error {
  readonly _tag = "FolderNotConfigured"
  constructor(readonly folder: keyof typeof FOLDER_FLAGS) {
    super(`the ${folder} folder is not configured: start wes-agent with --comfyui-dir or ${FOLDER_FLAGS[folder]}`)
  }
}

/** The folder, or FolderNotConfigured. */
export const folderOf = (options: AgentOptions, folder: keyof typeof FOLDER_FLAGS): string => {
  const dir = options.folders[folder]
  if (dir === null) throw new FolderNotConfigured(folder)
  return dir
}
