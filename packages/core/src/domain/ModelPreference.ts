/**
 * Which runners already hold a workflow's declared model files (issue 34): a runner that has
 * them runs it without a download first. A file counts as held when the runner's `/object_info`
 * lists it in a loader's file list (ComfyUI does not say which folder a list comes from, so the
 * file name decides), or when its agent reports having placed it there (folder, name and hash).
 *
 * The choice weighs what is missing against the work in flight: each missing file counts as
 * `MISSING_MODEL_WEIGHT` workflows in flight. So a runner that holds every file wins over one
 * that lacks some unless it is that much busier, and a burst of workflows needing the same model
 * still spreads over the other runners once the holder is loaded (a strict preference would pile
 * the whole burst onto one runner while others stand idle).
 */
import { type ModelFile, modelPlace } from "./ModelFiles.js"
import type { CapabilityIndex } from "./Needs.js"

/** Workflows in flight one missing model file weighs as. */
export const MISSING_MODEL_WEIGHT = 8

/** A model the agent placed, as its status reports it. */
export interface HeldModel {
  readonly folder: string
  readonly filename: string
  readonly sha256: string
}

/** How many of `models` a runner lacks, from its capabilities (if known) and its agent's inventory. */
export const missingModelCount = (
  models: ReadonlyArray<ModelFile>,
  index: CapabilityIndex | undefined,
  inventory: ReadonlyArray<HeldModel>
): number => {
  const placed = new Set(inventory.map((m) => `${modelPlace(m)}\u0000${m.sha256}`))
  const listed = (filename: string) => {
    if (index === undefined) return false
    for (const files of index.files.values()) if (files.has(filename)) return true
    return false
  }
  return models.filter((m) => !placed.has(`${modelPlace(m)}\u0000${m.sha256}`) && !listed(m.filename)).length
}

/** The loads a choice compares: each runner's work in flight plus its missing files' weight. */
export const weighedLoads = (
  inFlight: ReadonlyMap<string, number>,
  missing: ReadonlyMap<string, number>
): ReadonlyMap<string, number> => {
  const out = new Map(inFlight)
  for (const [id, count] of missing) out.set(id, (inFlight.get(id) ?? 0) + count * MISSING_MODEL_WEIGHT)
  return out
}

/**
 * The model files of `needs` a runner that provisions `models` will place itself: a graph input
 * naming a declared file (a declared file sits at its folder's top, so ComfyUI lists it by name).
 */
export const declaresFile = (models: ReadonlyArray<ModelFile>) => {
  const names = new Set(models.map((m) => m.filename))
  return (file: string): boolean => names.has(file)
}
