/**
 * `POST /provision` on the agent (issue 34, item 3): makes sure each declared model file is in
 * place, one after the other, reporting progress as `ProvisionLine`s (per file at most every
 * 250 ms or 1 %, and its final count) and ending with exactly one `done` or `failed` line (the
 * first file that could not be placed, named with why). While a request runs, none of its files
 * or partial downloads is evicted to make room for another.
 */
import { type ModelFile, ModelFile as ModelFileSchema } from "@wes/core"
import type { ProvisionLine } from "@wes/runner-client/agent-protocol"
import * as Schema from "effect/Schema"
import { describeError, ModelProvisionFailed } from "./ModelErrors.js"
import { placeModel } from "./ModelPlace.js"
import { progressReporter } from "./ProvisionProgress.js"
import type { ModelStore } from "./ModelStore.js"

const isModelFile = Schema.is(ModelFileSchema)

/** Why the declarations cannot be provisioned as they are, naming the file; undefined when they can. */
const invalid = (models: ReadonlyArray<ModelFile>): { readonly filename: string; readonly message: string } | undefined => {
  const seen = new Map<string, string>()
  for (const m of models) {
    const key = `${m.folder}/${m.filename}`
    // The HTTP route decodes the request; this guards the file system against any other caller.
    if (!isModelFile(m as unknown)) return { filename: m.filename, message: `${key} is not a valid model declaration (a ComfyUI model folder, a plain file name, an http(s) URL, a sha256)` }
    if (seen.has(key) && seen.get(key) !== m.sha256) return { filename: m.filename, message: `${key} is declared twice with different sha256` }
    seen.set(key, m.sha256)
  }
  return undefined
}

/**
 * Places `models` (see `ModelPlace`), calling `onLine` with progress and then one `done` or
 * `failed` line. A file that cannot be placed ends the request with its `failed` line; this never
 * rejects for it (only when `onLine` itself throws).
 */
export const ensureModels = async (
  store: ModelStore,
  models: ReadonlyArray<ModelFile>,
  onLine: (line: ProvisionLine) => void,
  signal?: AbortSignal
): Promise<void> => {
  const bad = invalid(models)
  if (bad !== undefined) return onLine({ type: "failed", ...bad })
  const release = store.pin(models)
  try {
    const done = new Set<string>()
    for (const model of models) {
      const key = `${model.folder}/${model.filename}`
      if (done.has(key)) continue
      done.add(key)
      try {
        await placeModel(store, model, progressReporter(model, onLine), signal)
      } catch (e) {
        const why = e instanceof ModelProvisionFailed ? e.message : `the agent could not place it: ${describeError(e)}`
        return onLine({ type: "failed", filename: model.filename, message: `${key}: ${why}` })
      }
    }
    onLine({ type: "done" })
  } finally {
    release()
  }
}

/** The same as `ensureModels` (the name the agent's server calls it by). */
export const provisionModels = ensureModels
