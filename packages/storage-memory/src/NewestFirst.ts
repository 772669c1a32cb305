/** An index of ids ordered by creation time, read newest first (ties: larger id first). */
import * as DateTime from "effect/DateTime"

interface Entry {
  readonly at: number
  readonly id: string
}

const before = (a: Entry, b: Entry): boolean => a.at < b.at || (a.at === b.at && a.id < b.id)

export class NewestFirst {
  private readonly entries: Array<Entry> = []

  get size(): number {
    return this.entries.length
  }

  /** Adds an id; O(1) for the usual case of a newer item, O(log n + n) otherwise. */
  add(id: string, createdAt: DateTime.Utc): void {
    const entry = { at: DateTime.toEpochMillis(createdAt), id }
    const last = this.entries[this.entries.length - 1]
    if (last === undefined || before(last, entry)) {
      this.entries.push(entry)
      return
    }
    let lo = 0
    let hi = this.entries.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (before(this.entries[mid]!, entry)) lo = mid + 1
      else hi = mid
    }
    this.entries.splice(lo, 0, entry)
  }

  remove(id: string): void {
    const i = this.entries.findIndex((e) => e.id === id)
    if (i !== -1) this.entries.splice(i, 1)
  }

  /** Ids, newest first. */
  *newest(): IterableIterator<string> {
    for (let i = this.entries.length - 1; i >= 0; i--) yield this.entries[i]!.id
  }

  /** How many were created at or after `since`: a binary search, O(log n) (checked on every create). */
  countSince(since: DateTime.Utc): number {
    const t = DateTime.toEpochMillis(since)
    let lo = 0
    let hi = this.entries.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.entries[mid]!.at < t) lo = mid + 1
      else hi = mid
    }
    return this.entries.length - lo
  }
}

/** One index per owner. */
export class IndexByOwner {
  private readonly owners = new Map<string, NewestFirst>()

  of(owner: string): NewestFirst {
    let index = this.owners.get(owner)
    if (index === undefined) {
      index = new NewestFirst()
      this.owners.set(owner, index)
    }
    return index
  }

  peek(owner: string): NewestFirst | undefined {
    return this.owners.get(owner)
  }
}

/** Collects up to `limit` items after skipping `skip`, counting all that pass `keep`. */
export const pageOf = <A>(
  items: Iterable<A>,
  keep: (a: A) => boolean,
  skip: number,
  limit: number
): { readonly items: ReadonlyArray<A>; readonly total: number } => {
  const out: Array<A> = []
  let total = 0
  for (const item of items) {
    if (!keep(item)) continue
    if (total >= skip && out.length < limit) out.push(item)
    total++
  }
  return { items: out, total }
}
