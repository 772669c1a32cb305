/** Shared setup of the provisioning tests: a temporary models folder, a store on it, and running `ensureModels` collecting its lines. */
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import type { ModelFile } from "@wes/core"
import type { ProvisionLine } from "@wes/runner-client/agent-protocol"
import { openModelStore, type ModelStore, type ModelStoreOptions } from "../src/ModelStore.js"
import { ensureModels } from "../src/Provision.js"

export const tempModelsDir = () => fs.mkdtemp(path.join(os.tmpdir(), "wes-agent-models-"))

export const openTestStore = (modelsDir: string, options: Partial<ModelStoreOptions> = {}): Promise<ModelStore> =>
  openModelStore({ modelsDir, budgetBytes: null, allowPrivateUrls: true, retryDelayMs: 0, ...options })

/** Runs one provisioning; answers its lines and its last line. */
export const provision = async (store: ModelStore, models: ReadonlyArray<ModelFile>, signal?: AbortSignal) => {
  const lines: Array<ProvisionLine> = []
  await ensureModels(store, models, (line) => lines.push(line), signal)
  return { lines, last: lines.at(-1), ends: lines.filter((l) => l.type !== "progress").length }
}

export const exists = (file: string) => fs.stat(file).then(() => true, () => false)

/** The names in `dir` (none when it does not exist). */
export const listDir = (dir: string) => fs.readdir(dir).catch(() => [] as Array<string>)
