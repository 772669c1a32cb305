/**
 * The order in which a runner takes its waiting work (issue 17): by effective priority, then by
 * fair share across users, then by age.
 *
 * - **Effective priority** is the workflow's priority (low 0, normal 1, high 2) plus one level
 *   for every `agingMs` it has waited: a workflow that waits long enough overtakes any newcomer,
 *   so nothing starves.
 * - **Fair share**: each user's waiting workflows are numbered in their own order (1, 2, ...); a
 *   workflow's turn is that number plus the user's workflows already on this runner. Lower turns go
 *   first, so users take turns (round robin among equals), and a user with work on the runner
 *   already waits behind one who has none. One user's burst of 1,000 therefore delays another
 *   user's single workflow by at most what is on the runner.
 *
 * Pure, and the one definition: the memory store sorts with it, PostgreSQL's claim statement says
 * the same in SQL, and the store conformance suite holds the two together.
 */
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import type { Priority } from "./Workflow.js"

/**
 * How long a waiting workflow takes to rise one priority level, for reads of the order outside
 * the dispatcher (queue positions); `wes serve` sets it with the dispatcher's `priorityAging`.
 */
export const PriorityAging: Context.Reference<Duration.Duration> = Context.Reference<Duration.Duration>("@wes/core/PriorityAging", {
  defaultValue: () => Duration.minutes(5)
})

/** Priority as a level: low 0, normal 1, high 2. */
export const priorityLevel = (p: Priority): number => (p === "high" ? 2 : p === "normal" ? 1 : 0)

/** What the order needs to know of a waiting workflow. */
export interface Waiting {
  readonly id: string
  readonly user_id: string
  readonly priority: Priority
  /** Creation time, epoch milliseconds. */
  readonly created_at: number
}

export interface Ranked<W extends Waiting> {
  readonly workflow: W
  readonly effective: number
  readonly turn: number
}

/** The effective priority of `w` at `now`. */
export const effectivePriority = (w: Waiting, now: number, agingMs: number): number =>
  priorityLevel(w.priority) + Math.max(0, Math.floor((now - w.created_at) / agingMs))

/** Oldest first; the id breaks ties. */
export const byAge = (a: Waiting, b: Waiting) => a.created_at - b.created_at || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)

/**
 * `waiting` in the order a runner takes it, given each user's workflows already on the runner
 * (`onRunner`, absent: none).
 */
export const orderWaiting = <W extends Waiting>(
  waiting: ReadonlyArray<W>,
  onRunner: ReadonlyMap<string, number>,
  now: number,
  agingMs: number
): ReadonlyArray<Ranked<W>> => {
  const byUser = new Map<string, Array<{ readonly workflow: W; readonly effective: number }>>()
  for (const w of waiting) {
    const entry = { workflow: w, effective: effectivePriority(w, now, agingMs) }
    const list = byUser.get(w.user_id)
    if (list === undefined) byUser.set(w.user_id, [entry])
    else list.push(entry)
  }
  const ranked: Array<Ranked<W>> = []
  for (const [user, list] of byUser) {
    list.sort((a, b) => b.effective - a.effective || byAge(a.workflow, b.workflow))
    const base = onRunner.get(user) ?? 0
    list.forEach((e, i) => ranked.push({ ...e, turn: base + i + 1 }))
  }
  return ranked.sort((a, b) => b.effective - a.effective || a.turn - b.turn || byAge(a.workflow, b.workflow))
}
