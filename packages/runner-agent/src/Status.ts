/**
 * `GET /status`: what the agent reports of its machine (issue 34, item 5), as `AgentStatus`:
 * its version, the GPU (`Gpu.ts`), free and total disk where ComfyUI writes (the output folder,
 * else ComfyUI's folder, else the models folder), the model files it placed with their sizes and
 * its budget (from the model store, when a models folder is configured), and whether cleanup is on.
 */
import * as fs from "node:fs"
import type { AgentStatus } from "@wes/core"
import { readGpu } from "./Gpu.js"
import type { ModelStore } from "./ModelStore.js"
import type { AgentOptions } from "./Options.js"

/** The package's version (package.json sits next to both src/ and dist/). */
export const AGENT_VERSION: string = (() => {
  try {
    const pkg = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { readonly version?: unknown }
    return typeof pkg.version === "string" ? pkg.version : "unknown"
  } catch {
    return "unknown"
  }
})()

/** Free and total bytes of the file system holding `dir`, or null when it cannot be read. */
export const diskOf = async (dir: string | null): Promise<AgentStatus["disk"]> => {
  if (dir === null) return null
  try {
    const s = await fs.promises.statfs(dir)
    return { free_bytes: s.bavail * s.bsize, total_bytes: s.blocks * s.bsize }
  } catch {
    return null
  }
}

export interface StatusSources {
  readonly options: AgentOptions
  /** The model store, when a models folder is configured. */
  readonly models: ModelStore | null
  /** The `nvidia-smi` to run (a path or a name on PATH). */
  readonly nvidiaSmi: string
}

export const readStatus = async (sources: StatusSources): Promise<AgentStatus> => {
  const { folders } = sources.options
  const [gpu, disk] = await Promise.all([
    readGpu(sources.options.comfyui, sources.nvidiaSmi),
    diskOf(folders.output ?? folders.comfyui ?? folders.models)
  ])
  return {
    agent_version: AGENT_VERSION,
    gpu,
    disk,
    models: sources.models?.inventory() ?? [],
    model_budget_bytes: sources.options.modelBudgetBytes,
    cleanup: sources.options.cleanup
  }
}
