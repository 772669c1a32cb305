/**
 * The waiting workflows of one queue (a runner's, per user and priority), oldest first (by
 * creation, then id): a sorted array read from a moving head. Claims take the oldest, so
 * removing it is O(1) (the head moves; the array is cut once the dead front outgrows the rest),
 * where `splice` or `shift` moved the whole backlog (a runner's backlog of 20,000 is a large
 * object V8 cannot trim in place). Finding a workflow is a binary search, O(log n); inserting
 * the newest appends.
 */
import type { Workflow } from "@wes/core"

const older = (a: Workflow, b: Workflow) =>
  a.created_at.epochMilliseconds < b.created_at.epochMilliseconds || (a.created_at.epochMilliseconds === b.created_at.epochMilliseconds && a.id < b.id)

/** The dead front is cut once it is this long and at least half the array. */
const CUT_AFTER = 1024

export class OldestFirst {
  private items: Array<Workflow | undefined> = []
  private head = 0

  get length(): number {
    return this.items.length - this.head
  }

  /** Where `w` is, or would go: the first live index not older than it. */
  private indexOf(w: Workflow): number {
    let lo = this.head
    let hi = this.items.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (older(this.items[mid]!, w)) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  insert(w: Workflow): void {
    const i = this.indexOf(w)
    if (i === this.items.length) this.items.push(w)
    else this.items.splice(i, 0, w)
  }

  /** Takes out the workflow with `w`'s id, created when `w` was; false when it is not here. */
  remove(w: Workflow): boolean {
    const i = this.indexOf(w)
    if (this.items[i]?.id !== w.id) return false
    if (i !== this.head) {
      this.items.splice(i, 1)
      return true
    }
    this.items[i] = undefined
    this.head++
    if (this.head === this.items.length) {
      this.items = []
      this.head = 0
    } else if (this.head >= CUT_AFTER && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return true
  }

  /** Puts `after` where `before` (this very record) stands; false when it is not here. */
  replace(before: Workflow, after: Workflow): boolean {
    const i = this.indexOf(before)
    if (this.items[i] !== before) return false
    this.items[i] = after
    return true
  }

  *[Symbol.iterator](): IterableIterator<Workflow> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i]!
  }
}
