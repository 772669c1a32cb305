/**
 * The disk budget's arithmetic (issue 34, item 3): what must go so that `needed` more bytes fit
 * beside what the agent holds. Only what the agent wrote counts (files it placed, partial
 * downloads); among those, what the current requests need or a download is writing cannot go;
 * the rest goes least recently used first. Pure: the store applies the plan.
 */

/** Something the agent holds on disk against its budget. */
export interface Holding {
  readonly key: string
  readonly bytes: number
  /** Smaller: used longer ago, evicted sooner. */
  readonly lastUsed: number
  /** False while a request needs it or a download writes it. */
  readonly evictable: boolean
}

export type BudgetPlan =
  | { readonly fits: true; readonly evict: ReadonlyArray<Holding> }
  /** Does not fit even with every evictable holding gone; `inUse` bytes are held by what cannot go. */
  | { readonly fits: false; readonly inUse: number }

/** What to evict so that `held + needed <= budget` (null budget: everything fits). */
export const planEviction = (budget: number | null, holdings: ReadonlyArray<Holding>, needed: number): BudgetPlan => {
  if (budget === null) return { fits: true, evict: [] }
  let held = holdings.reduce((sum, h) => sum + h.bytes, 0)
  if (held + needed <= budget) return { fits: true, evict: [] }
  const inUse = holdings.filter((h) => !h.evictable).reduce((sum, h) => sum + h.bytes, 0)
  if (inUse + needed > budget) return { fits: false, inUse }
  const evict: Array<Holding> = []
  for (const h of holdings.filter((h) => h.evictable).sort((a, b) => a.lastUsed - b.lastUsed)) {
    if (held + needed <= budget) break
    evict.push(h)
    held -= h.bytes
  }
  return { fits: true, evict }
}
