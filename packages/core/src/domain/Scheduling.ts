/**
 * Runner eligibility and choice (design.md section 5): a runner is eligible when it is active,
 * accessible to the caller (owned, or managed and allowed for the tier), not known to run a ComfyUI
 * below the minimum (a runner downgraded since it was registered), and its tags contain every
 * workflow tag. Among eligible runners the one with the least work in flight wins; ties go round
 * robin.
 */
import { supportedComfyUI } from "./ComfyUIVersion.js"
import type { RunnerTarget } from "./Runner.js"
import { tagsMatch } from "./Tags.js"
import { managedRunnerTypesFor, type RunnerType, type Tier } from "./Tier.js"

/** Filters candidates down to those that may run a workflow with `tags`. */
export const eligibleRunners = <R extends RunnerTarget>(
  candidates: ReadonlyArray<R>,
  tags: ReadonlyArray<string>
): ReadonlyArray<R> => candidates.filter((r) => takesWork(r) && tagsMatch(r.tags, tags))

/** Active, and not known to run an unsupported ComfyUI. */
export const takesWork = (r: RunnerTarget): boolean => r.status === "active" && supportedComfyUI(r.comfyui)

/** True when a managed runner of `type` serves `tier`. */
export const managedRunnerServes = (type: RunnerType, tier: Tier): boolean =>
  managedRunnerTypesFor(tier).includes(type)

/**
 * Picks a runner: fewest in flight; among those tied, the `cursor`-th (mod the tie count) in id
 * order, so a caller that advances the cursor spreads ties round robin. `undefined` for no
 * candidates.
 */
export const pickRunner = <R extends { readonly id: string }>(
  eligible: ReadonlyArray<R>,
  inFlight: ReadonlyMap<string, number>,
  cursor: number
): R | undefined => {
  let least = Infinity
  let tied: Array<R> = []
  for (const r of eligible) {
    const load = inFlight.get(r.id) ?? 0
    if (load < least) {
      least = load
      tied = [r]
    } else if (load === least) {
      tied.push(r)
    }
  }
  if (tied.length === 0) return undefined
  tied.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
  return tied[((cursor % tied.length) + tied.length) % tied.length]
}
